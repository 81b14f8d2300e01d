"""A ``trainable`` flag changed after Keras traced a model's train step: the step keeps its list.

Keras 3 (TensorFlow backend) reads ``trainable_variables`` when it traces the train step, at
the first ``fit()`` or ``train_on_batch()`` after ``compile()``, and runs that trace from then
on: a layer unfrozen later is silently not trained, one frozen later is still trained. No
gradient is ``None`` and Keras says nothing: its check (``_warn_if_trainable_state_changed``)
sits after a ``raise`` in Keras 3.15 and never runs. ``compile()`` drops the traced step. So
each trace keeps the flags it read, and each later ``fit()`` of the same traced step
compares them with the flags it finds.

A flag changed between ``compile()`` and the trace takes effect, though Keras' own docs say
trainable variables are fixed at ``compile()``: the trace names each such variable, frozen
or trained, with a note. That may be what the user meant (freeze a base, then fit), so it is
a problem only when the step then trains nothing: the Keras 2 GAN idiom, a discriminator
frozen for the combined model after its own ``compile()``, whose ``train_on_batch()`` never
trains it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from gradscope._src.results import causes, words
from gradscope._src.results.run import FUNCTION, CallResult
from gradscope._src.watcher import fit, sites
from gradscope._src.watcher.analyse import SourceStatic
from gradscope._src.watcher.watch import Static, Watcher

#: The ``where`` of the sites these calls are recorded at (apart from the step's own calls),
#: less ``KINDS`` times the model's number (each model at a line has its own: a loop's)
WHERE = -2
SINCE_COMPILE = -3
DURING = -4  # flags a fit() changed while it ran (a callback's)
KINDS = 3


@dataclass
class Trace:
    """What one trace of a model's train step read."""

    model: Any
    function: Any  # the model's ``train_function`` the trace belongs to
    site: str  # the user's line that ran the trace (its fit() line)
    flags: dict[int, tuple[Any, bool]]  # id(variable) -> (variable, its trainable flag then)
    trained: dict[int, bool] = field(default_factory=dict)  # id(variable) -> got a gradient


class Traces:
    """The last trace of each model's train step."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.by_model: dict[int, Trace] = {}
        # id(model) -> (model, its compile() line, id(variable) -> trainable then)
        self.compiled: dict[int, tuple[Any, str, dict[int, bool]]] = {}
        self._local = threading.local()
        #: (site, note) of each call made here -> the model's variables, named, in order
        self.recorded: dict[tuple[str, str], list[str]] = {}
        self._numbers: dict[int, int] = {}  # id(model) -> its number, from 0, as first seen

    def where(self, kind: int, model: Any) -> int:
        """The ``where`` of a call of ``kind`` (``WHERE``...) made for ``model``: its own site
        at the line, so that a loop's models are each reported once."""
        number = self._numbers.setdefault(id(model), len(self._numbers))
        return kind - KINDS * number

    def compile(self, model: Any) -> None:
        """``model.compile()`` returned: the flags it saw, per variable."""
        flags = {key: now for key, (_, now) in trained_now(model).items()}
        line = sites.text(sites.current())
        self.compiled[id(model)] = (model, line, flags)
        fit.compiled(model, line)

    @contextmanager
    def step(self, model: Any) -> Iterator[None]:
        """Around a model's train step as Keras runs it: traced (once per trace), or run
        eagerly (``run_eagerly``: each step reads the flags afresh, so nothing is kept)."""
        import tensorflow as tf

        if tf.executing_eagerly():
            self.by_model.pop(id(model), None)
            yield
            return
        trace = Trace(model, getattr(model, "train_function", None),
                      sites.text(sites.current()), trained_now(model))  # fmt: skip
        self.by_model[id(model)] = trace
        outer = getattr(self._local, "trace", None)
        self._local.trace = trace
        try:
            yield
        finally:
            self._local.trace = outer
        self.since_compile(trace)

    def since_compile(self, trace: Trace) -> None:
        """A call at the tracing line for each variable whose flag changed since compile()
        and that the step follows (frozen: not trained; made trainable: trained)."""
        model, line, flags = self.compiled.get(id(trace.model), (None, "", {}))
        if model is not trace.model:
            return
        changed = [(v, now) for key, (v, now) in trace.flags.items()
                   if key in flags and flags[key] != now
                   and trace.trained.get(key, False) == now]  # fmt: skip
        if not changed:
            return
        api = fit.api() or "fit"
        state = self.watcher.site(trace.site, api, FUNCTION, self.where(SINCE_COMPILE, model))
        if self.watcher.done(state):
            return
        names = sites.unique([sites.variable_name(v) for v, _ in changed])
        idle = not any(trace.trained.values())  # the step trains nothing at all
        statics = [_compiled_static(n, v, now, line, api, idle)
                   for n, (v, now) in zip(names, changed, strict=True)]  # fmt: skip
        note = words.changed_since_compile(line, api)
        self.recorded[state.site, note] = _order(trace.model)
        self.watcher.record(state, Static(statics, "", (note,), measured=False), None)

    def gradients(self, sources: Sequence[Any], grads: Sequence[Any]) -> None:
        """A gradient call in the train step being traced: which variables it trains."""
        trace = getattr(self._local, "trace", None)
        if trace is None:
            return
        for s, g in zip(sources, grads, strict=True):
            trace.trained[id(s)] = trace.trained.get(id(s), False) or g is not None

    def changed(self, model: Any) -> tuple[Trace, list[tuple[Any, bool]]] | None:
        """The trace ``model`` will run and each variable whose flag changed since, with
        whether the trace trains it; None when nothing changed that matters."""
        trace = self.by_model.get(id(model))
        if trace is None or trace.model is not model:
            return None
        if trace.function is None or trace.function is not getattr(model, "train_function", None):
            return None  # compile() dropped the step: the next fit() traces it afresh
        now = trained_now(model)
        found = []
        for key, (variable, was) in trace.flags.items():
            trained = trace.trained.get(key, False)
            flag = now.get(key, (variable, False))[1]
            if flag != was and flag != trained:
                found.append((variable, trained))
        return (trace, found) if found else None


def trained_now(model: Any) -> dict[int, tuple[Any, bool]]:
    """Per variable of ``model``, whether Keras' own train step, traced now, would train it:
    whether it is in ``trainable_weights`` (what ``train_step`` asks gradients of: its own
    flag, and the model's), wherever the flags were set (a module, a callback, a layer)."""
    trained = {id(v) for v in model.trainable_weights}
    return {id(v): (v, id(v) in trained) for v in model.variables}


def merged(calls: Sequence[CallResult], traces: Traces) -> list[CallResult]:
    """The calls, each made here folded into the train step's own call at its line (same
    site, api and step; measured): its sources take the note and the flag, and the variables
    the step leaves out join them, in the model's order. One made where the step was not
    watched stays alone."""
    out = list(calls)
    for extra in [c for c in calls if (c.site, c.notes[:1] and c.notes[0]) in traces.recorded]:
        order = traces.recorded[extra.site, extra.notes[0]]
        known = set(order)
        step = next((c for c in out if c is not extra and c.value is not None
                     and (c.site, c.api, c.step) == (extra.site, extra.api, extra.step)
                     and all(s.name in known for s in c.sources)),  # that model's own step
                    None)  # fmt: skip
        if step is None:
            continue
        changed = {s.name: s for s in extra.sources}
        sources = [replace(s, cause=changed[s.name].cause,
                           trainable_changed=changed[s.name].trainable_changed)
                   if s.name in changed else s for s in step.sources]  # fmt: skip
        names = {s.name for s in step.sources}
        sources += [s for s in extra.sources if s.name not in names]
        rank = {name: i for i, name in enumerate(order)}
        sources.sort(key=lambda s: rank.get(s.name, len(rank)))
        out[out.index(step)] = replace(step, sources=tuple(sources),
                                       notes=step.notes + extra.notes)  # fmt: skip
        out.remove(extra)
    return out


def report(watcher: Watcher, traces: Traces, model: Any, api: str) -> dict[int, bool]:
    """At a ``fit()`` of a model whose traced train step will run: a call for each variable
    whose ``trainable`` flag no longer matches what that step does.

    Args:
        watcher: where the call goes (at the user's line, as ``api``).
        traces: the traced train steps.
        model: the model ``fit()`` (or ``train_on_batch()``) was called on.
        api: ``fit`` or ``train_on_batch``.

    Returns:
        The flags now, per variable: what :func:`report_during` compares with once the
        ``fit()`` returns.
    """
    now = {key: flag for key, (_, flag) in trained_now(model).items()}
    found = traces.changed(model)
    if found is not None:
        trace, changed = found
        _record(watcher, traces, model, api, changed, WHERE,
                words.reused_step(api, trace.site), trace.site, during=False)  # fmt: skip
    return now


def report_during(watcher: Watcher, traces: Traces, model: Any, api: str,
                  before: dict[int, bool]) -> None:  # fmt: skip
    """When a ``fit()`` returns: a call for each variable whose flag changed while it ran
    (``before``: the flags at its start; a callback froze or unfroze a layer) and that its
    traced train step, which read the flags before, still trains or still leaves out."""
    found = traces.changed(model)
    if found is None:
        return
    trace, changed = found
    now = trained_now(model)
    during = [(v, trained) for v, trained in changed
              if before.get(id(v), not trained) != now[id(v)][1]]  # fmt: skip
    if during:
        _record(watcher, traces, model, api, during, DURING,
                words.changed_during(api, trace.site), trace.site, during=True)  # fmt: skip


def _record(watcher: Watcher, traces: Traces, model: Any, api: str,
            changed: list[tuple[Any, bool]], where: int, note: str, traced: str,
            during: bool) -> None:  # fmt: skip
    """The call, at the user's ``fit()`` line, that names each variable of ``changed`` (with
    whether the traced step trains it) and why."""
    state = watcher.site(sites.text(sites.current()), api, FUNCTION, traces.where(where, model))
    if watcher.done(state):
        return
    names = sites.unique([sites.variable_name(v) for v, _ in changed])
    now = trained_now(model)
    statics = [_static(name, v, trained, now[id(v)][1], traced, during)
               for name, (v, trained) in zip(names, changed, strict=True)]  # fmt: skip
    traces.recorded[state.site, note] = _order(model)
    watcher.record(state, Static(statics, "", (note,), measured=False), None)


def _order(model: Any) -> list[str]:
    return sites.unique([sites.variable_name(v) for v in model.variables])


def _static(name: str, variable: Any, trained: bool, trainable: bool, traced: str,
            during: bool) -> SourceStatic:  # fmt: skip
    shape = tuple(variable.shape)
    cause = causes.ChangedAfterTrace(line=traced, trained=trained, during=during)
    return SourceStatic(name, shape, trained, reachable=trained, cause=cause,
                        trainable=trainable, requested=trained,
                        trainable_changed=True)  # fmt: skip


def _compiled_static(name: str, variable: Any, trainable: bool, line: str, api: str,
                     idle: bool) -> SourceStatic:  # fmt: skip
    shape = tuple(variable.shape)
    if trainable:
        cause = causes.SinceCompile(line=line, api=api, trainable=True)
        return SourceStatic(name, shape, True, reachable=True, cause=cause)
    cause = causes.SinceCompile(line=line, api=api, idle=idle)
    return SourceStatic(name, shape, False, cause=cause, trainable=False, requested=False,
                        trainable_changed=idle)  # fmt: skip
