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

from gradscope._src.frontends.program import fit, sites
from gradscope._src.frontends.program.analyse import SourceStatic
from gradscope._src.frontends.program.watch import Static, Watcher
from gradscope._src.results import words
from gradscope._src.results.run import FUNCTION, CallResult

#: The ``where`` of the sites these calls are recorded at (apart from the step's own calls).
WHERE = -2
SINCE_COMPILE = -3


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

    def compile(self, model: Any) -> None:
        """``model.compile()`` returned: the flags it saw, per variable."""
        flags = {id(v): bool(v.trainable) for v in model.variables}
        self.compiled[id(model)] = (model, sites.text(sites.current()), flags)

    @contextmanager
    def step(self, model: Any) -> Iterator[None]:
        """Around a model's train step as Keras runs it: traced (once per trace), or run
        eagerly (``run_eagerly``: each step reads the flags afresh, so nothing is kept)."""
        import tensorflow as tf

        if tf.executing_eagerly():
            self.by_model.pop(id(model), None)
            yield
            return
        flags = {id(v): (v, bool(v.trainable)) for v in model.variables}
        trace = Trace(model, getattr(model, "train_function", None),
                      sites.text(sites.current()), flags)  # fmt: skip
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
        changed = [v for key, (v, now) in trace.flags.items()
                   if key in flags and flags[key] != now
                   and trace.trained.get(key, False) == now]  # fmt: skip
        if not changed:
            return
        api = fit.api() or "fit"
        state = self.watcher.site(trace.site, api, FUNCTION, SINCE_COMPILE)
        if self.watcher.done(state):
            return
        names = sites.unique([sites.variable_name(v) for v in changed])
        idle = not any(trace.trained.values())  # the step trains nothing at all
        statics = [_compiled_static(n, v, line, api, idle)
                   for n, v in zip(names, changed, strict=True)]  # fmt: skip
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
        found = []
        for key, (variable, was) in trace.flags.items():
            trained = trace.trained.get(key, False)
            if bool(variable.trainable) != was and bool(variable.trainable) != trained:
                found.append((variable, trained))
        return (trace, found) if found else None


def merged(calls: Sequence[CallResult], traces: Traces) -> list[CallResult]:
    """The calls, each made here folded into the train step's own call at its line (same
    site, api and step; measured): its sources take the note and the flag, and the variables
    the step leaves out join them, in the model's order. One made where the step was not
    watched stays alone."""
    out = list(calls)
    for extra in [c for c in calls if (c.site, c.notes[:1] and c.notes[0]) in traces.recorded]:
        order = traces.recorded[extra.site, extra.notes[0]]
        step = next((c for c in out if c is not extra and c.value is not None
                     and (c.site, c.api, c.step) == (extra.site, extra.api, extra.step)),
                    None)  # fmt: skip
        if step is None:
            continue
        changed = {s.name: s for s in extra.sources}
        sources = [replace(s, note=changed[s.name].note,
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


def report(watcher: Watcher, traces: Traces, model: Any, api: str) -> None:
    """At a ``fit()`` of a model whose traced train step will run: a call for each variable
    whose ``trainable`` flag no longer matches what that step does.

    Args:
        watcher: where the call goes (at the user's line, as ``api``).
        traces: the traced train steps.
        model: the model ``fit()`` (or ``train_on_batch()``) was called on.
        api: ``fit`` or ``train_on_batch``.
    """
    found = traces.changed(model)
    if found is None:
        return
    trace, changed = found
    state = watcher.site(sites.text(sites.current()), api, FUNCTION, WHERE)
    if watcher.done(state):
        return
    names = sites.unique([sites.variable_name(v) for v, _ in changed])
    statics = [_static(name, v, trained, trace.site, api)
               for name, (v, trained) in zip(names, changed, strict=True)]  # fmt: skip
    note = words.reused_step(api, trace.site)
    traces.recorded[state.site, note] = _order(model)
    watcher.record(state, Static(statics, "", (note,), measured=False), None)


def _order(model: Any) -> list[str]:
    return sites.unique([sites.variable_name(v) for v in model.variables])


def _static(name: str, variable: Any, trained: bool, traced: str, api: str) -> SourceStatic:
    shape = tuple(variable.shape)
    note = words.changed_after_trace(trained, traced)
    return SourceStatic(name, shape, trained, reachable=trained, note=note,
                        trainable=bool(variable.trainable), requested=trained,
                        trainable_changed=True)  # fmt: skip


def _compiled_static(name: str, variable: Any, line: str, api: str, idle: bool) -> SourceStatic:
    shape = tuple(variable.shape)
    if variable.trainable:
        note = words.since_compile(line, api, trainable=True)
        return SourceStatic(name, shape, True, reachable=True, note=note)
    note = words.since_compile(line, api, trainable=False, idle=idle)
    return SourceStatic(name, shape, False, note=note, trainable=False, requested=False,
                        trainable_changed=idle)  # fmt: skip
