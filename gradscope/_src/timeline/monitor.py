"""``gradscope.keras.Monitor``: a Keras callback recording gradients over ``fit`` every K steps.

::

    from gradscope.keras import Monitor

    monitor = Monitor(every=10, timeline="timeline.json", tensorboard="logs/grads")
    model.fit(x, y, epochs=5, callbacks=[monitor])
    monitor.findings     # [Finding(kind=FindingKind.DEAD, variable="dense_1/kernel", step=40, ...)]

A fit that found something ends with one line on standard error naming what it found
(``gradscope: fit() at train.py:40 found 1 problem: dense_1/kernel dead from step 40 ...``).

Works with compiled losses, several outputs, ``add_loss``, regularizers and custom
``train_step``s that call ``optimizer.apply_gradients`` (or ``apply``), traced (with or
without XLA) or eager; the hooks are in :mod:`gradscope._src.timeline.keras_hooks`. The site is
the user's ``fit(...)`` line. Steps count on from the optimizer's ``iterations`` at the fit's
start (from 1), and a step mixed precision's loss scale skipped counts too.
Step 1 is recorded too (as ``gradscope run`` does), so a problem from the start shows at
step 1. With ``steps_per_execution`` > 1 the record has a row per step of an execution, each
due step writing its own, and the callback reads them all once the execution is done.
Under a ``tf.distribute`` strategy (``MirroredStrategy``) the gradients recorded are the
all-reduced ones the optimizer applies and the loss is the replicas' sum; per-loss gradients
are not recorded there (a replica's own would not be the applied ones).

Cost: one train function, Keras' own step with the hooks, traced once; the recording sits
in a ``tf.cond`` on the step, so steps not recorded skip it on the device, and a recorded
step reduces each gradient and weight to a few float64 numbers there (only with TensorBoard
histograms are whole gradients copied aside). What ``gradscope run`` says of the same
``fit`` comes from the same passes (``gradscope._src.watcher.passes``), asked of the traced
step's ``tape.gradient``: a None gradient's cause, cut points and lines
(:func:`gradscope._src.watcher.graph_calls.tape_causes`), a non-finite one's origin, looked for
only on a due step whose gradients are not all finite
(:func:`gradscope._src.watcher.graph_calls.step_origins`), and the tf.Variables Keras does
not track that the step reads (``never-trained``).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import warnings
import weakref
from typing import Any

import keras

from gradscope._src.frontends import backend
from gradscope._src.location import Location
from gradscope._src.results.finding import Finding, file_of
from gradscope._src.timeline import failed, traced
from gradscope._src.timeline.findings import Thresholds, ended_line
from gradscope._src.timeline.monitor_args import check_arguments, check_writable, rescue
from gradscope._src.timeline.record import Recorder, Summary
from gradscope._src.watcher.sites import variable_name


class Monitor(keras.callbacks.Callback):  # type: ignore[misc]
    """Record every ``every`` steps each variable's gradient: status, norm, the variable's
    own norm, zero fraction; per loss with several losses, and their cosines.

    Args:
        every: record step 1 and the steps that are multiples of ``every`` (the Monitor counts
            the train steps it sees, skipped ones included: a loss scale's skipped step is
            a step).
        timeline: write the timeline JSON (contract section 7) here when training ends.
        tensorboard: write TensorBoard scalars and histograms to this directory.
        thresholds: when a series becomes a finding (:class:`gradscope.keras.Thresholds`).
        histograms: also write gradient histograms to TensorBoard.
        per_loss: with several losses, also record each loss's gradients and their cosines
            (one more backward pass per loss on recorded steps).

    Raises:
        TypeError: an argument of the wrong type.
        ValueError: ``every`` below 1.
        OSError: ``timeline`` or ``tensorboard`` cannot be written (also checked when a
            ``fit`` begins, before its first step).
        gradscope.UsageError: Keras runs on its PyTorch backend (or another gradscope does
            not watch: ``NotTensorFlow``; also checked when a ``fit`` begins).
    """

    def __init__(
        self,
        every: int = 10,
        timeline: str | os.PathLike[str] | None = None,
        tensorboard: str | os.PathLike[str] | None = None,
        *,
        thresholds: Thresholds | None = None,
        histograms: bool = True,
        per_loss: bool = True,
    ) -> None:
        super().__init__()
        check_arguments(every, timeline, tensorboard, thresholds, histograms, per_loss)
        backend.check_keras(door=_WHO)  # Keras on PyTorch: refused at once
        self.recorder = Recorder(
            every, timeline, tensorboard, thresholds=thresholds, histograms=histograms
        )
        self.per_loss = per_loss
        self._outputs = (timeline, tensorboard)
        self.site = "fit"
        self._hooks: Any = None
        self._plain: Any = None
        self._recording: Any = None
        self._next = self._last = self._per_call = 1
        self._pending = self._stepping = False
        self._batches = 0  # steps this fit has run (the optimizer may count none)
        self._said: set[tuple[str, str, str]] = set()  # findings an ended fit's line named
        self._installed: _Installed | None = None
        # A fit interrupted (Ctrl-C) or raising never reaches on_train_end: the timeline of
        # the steps recorded so far is written when the program exits.
        atexit.register(_close_at_exit, weakref.ref(self))
        # model, hooks, function, Keras' put back, the flags the function's trace read
        self._kept: tuple[Any, Any, Any, Any, Any] | None = None
        self._pin: traced.Flags | None = None  # set while the hooked function first traces
        self._flags: traced.Flags | None = None
        self._jax: Any = None  # on Keras' JAX backend: the recording (timeline/jax_monitor.py)

    @property
    def steps(self) -> list[dict[str, Any]]:
        """The step records so far, as in the timeline JSON."""
        self._settle()
        return self.recorder.steps

    @property
    def findings(self) -> list[Finding]:
        """The findings of the steps recorded so far: the one finding type every result
        holds (``kind``, ``variable``, ``step`` it holds from, ``message``, ``fix``,
        ``location`` the ``fit()`` line); the timeline JSON keeps them as dictionaries."""
        self._settle()
        return [Finding.from_dict(f, file_of(self.site)) for f in self.recorder.findings()]

    @property
    def timeline(self) -> dict[str, Any]:
        """The timeline JSON as a dictionary."""
        self._settle()
        return self.recorder.to_dict()

    def _settle(self) -> None:
        """Collect the due steps the last execution recorded, when a fit ended without
        reaching ``on_train_end`` or the next step (Ctrl-C, an exception in a callback): they
        are recorded on the device already. Not between a step's ``on_train_batch_begin`` and
        its run (``_stepping``): its due steps are not recorded yet."""
        if self._hooks is not None and self._pending and not self._stepping:
            with contextlib.suppress(Exception):  # never a new error where the program had one
                self._collect()

    def on_train_begin(self, logs: Any = None) -> None:
        backend.check_keras(door=_WHO)
        self._settle()  # what a fit that raised left behind
        check_writable(*self._outputs)  # before any step: none is trained for nothing
        self.site = _user_line()
        at = Location.parse(self.site)
        self.recorder.program = at.file if at is not None else self.recorder.program
        model = self.model
        if backend.keras_backend() == "jax":  # Keras' JAX trainer: its value_and_grad watched
            from gradscope._src.frontends.python.jax_lines import device
            from gradscope._src.timeline.jax_monitor import JaxRecording

            self._jax = self._jax or JaxRecording(self.recorder)
            self.recorder.device = device()
            self._jax.begin(model, self.site)
            return
        # One train function: Keras' own step with the hooks, traced once (Keras traces its
        # own on the first step, so a first fit traces exactly as often as without the
        # Monitor). Recording runs inside it, in a tf.cond on the step, so the steps not
        # recorded skip it on the device. Keras' own function is put back at the end; a
        # later fit with this Monitor reuses the hooked one when nothing was recompiled.
        _clear(model, self.params)  # what a fit that raised left installed; one Monitor a fit
        self._plain = plain = model.train_function
        # The flags Keras' own step reads: its trace's (a flag changed since changes nothing
        # it computes), or, not traced yet, the flags now. The Monitor's trace reads the same.
        keras_flags = traced.reference(model, plain)
        self._hooks, self._recording, flags, self._pin = self._hooked(model, keras_flags)
        self._flags = flags
        # Keras' own function back at the end: traced already, or, when the Monitor's trace
        # stood in for its first, traced at its first call with the flags the Monitor's read.
        # (run_eagerly: each step reads the flags afresh, nothing traced keeps them)
        stood_in = keras_flags is None and not model.run_eagerly
        back = traced.FirstCall(model, plain, flags) if stood_in else plain
        self._installed = _Installed(self, self._hooks, back, self.params)
        object.__setattr__(model, _ACTIVE, self._installed)
        guarded = self._guarded(model, self._recording, self._installed)
        object.__setattr__(model, "train_function", guarded)
        self.recorder.device = _device(model)
        self._hooks.begin(int(model.optimizer.iterations.numpy()))
        self._next = self._last = self._hooks.step() + 1
        self._per_call = max(int(getattr(model, "steps_per_execution", 1)), 1)
        self._pending, self._batches = False, 0
        self._changed(model, flags)

    def _hooked(self, model: Any, keras_flags: traced.Flags | None) -> tuple[Any, ...]:
        """The hooks, the train function traced with them, the flags its trace reads, and
        those to set while its first call traces it (None: as they are): the last fit's
        function when the model still has the optimizer and the train function it had then,
        else new ones, whose trace reads the flags Keras' own step reads."""
        from gradscope._src.timeline.keras_hooks import Hooks

        kept = self._kept
        # compile() resets train_function: the one left at the end means nothing changed since
        same = kept is not None and kept[0] is model and kept[3] is model.train_function
        eager = bool(model.run_eagerly)  # each step reads the flags as they are then
        if kept is not None and same and kept[1].optimizer is model.optimizer:
            kept[1].install()
            return kept[1], kept[2], traced.now(model) if eager else kept[4], None
        raw = self.recorder.histograms  # TensorBoard histograms need the gradients themselves
        hooks = Hooks(model, self.recorder.every, self.per_loss, raw=raw)
        model.make_train_function(force=True)  # untraced: Keras traces it on the first step
        if eager:
            return hooks, model.train_function, traced.now(model), None
        flags = keras_flags or traced.now(model, self.site)
        return hooks, model.train_function, flags, keras_flags

    def _changed(self, model: Any, flags: traced.Flags) -> None:
        """A finding for each variable whose ``trainable`` flag changed after the step this
        fit runs was traced, as ``gradscope run`` reports it: still trained, or left out."""
        from gradscope._src.analysis.fixes import Context, fix_for
        from gradscope._src.results.causes import ChangedAfterTrace
        from gradscope._src.results.status import decide

        where = flags.site or "an earlier fit()"
        for variable, trained in traced.changes(model, flags):
            name = variable_name(variable)
            said = ChangedAfterTrace(line=where, trained=trained)
            note = str(said)
            # the status the traced step gives it, as ``gradscope run`` decides it
            status = decide(has_gradient=trained, requested=trained,
                            trainable=bool(variable.trainable), reachable=trained)  # fmt: skip
            fix = fix_for(Context(str(status), name, site=self.site, cause=said))
            self.recorder.notices.append({
                "kind": "unexpected-connected" if trained else "never-trained",
                "site": self.site, "variable": name, "from_step": self._next,
                "message": f"{name}: {note}",
                **({"traced_at": flags.site} if flags.site else {}),
                **({"fix": fix.to_dict()} if fix is not None else {}),
            })  # fmt: skip

    def _guarded(self, model: Any, recording: Any, installed: _Installed) -> Any:
        """The recording train function, which puts Keras' own back (and the hooks away)
        when a ``fit`` without this Monitor calls it: a ``fit`` that raised never reaches
        ``on_train_end``, and Keras keeps its train function for the next ``fit``."""

        def train_function(iterator: Any) -> Any:
            # no on_train_batch_begin of this Monitor (not its fit), or it has moved on
            if not self._stepping or self._installed is not installed:
                installed.undo(model)
                return model.train_function(iterator)
            self._stepping = False
            try:
                with traced.pinned(self._pin):  # the first call traces: Keras' step's flags
                    return recording(iterator)
            except BaseException as error:  # goes on unchanged, once the Monitor has said why
                self._fit_raised(error, installed)
                raise
            finally:
                self._pin = None

        return train_function

    def _fit_raised(self, error: BaseException, installed: _Installed) -> None:
        """A step raised out of ``fit`` (Keras' "No gradients provided for any variable", a
        custom step's arithmetic on a None gradient, a NaN check, Ctrl-C): before the
        exception goes on, unchanged, keep what the Monitor saw. The steps recorded so far
        are collected; the gradients the failing step got none of are findings, with the
        cause, op and line ``gradscope run`` names, said on standard error; the timeline is
        written; Keras' own train function is back. Keras' end of an epoch's data
        (``StopIteration``, ``OutOfRangeError``) is no failure."""
        if isinstance(error, StopIteration) or type(error).__name__ == "OutOfRangeError":
            return
        hooks, step = self._hooks, max(self._next - self._per_call, 1)
        self._settle()
        with contextlib.suppress(Exception):  # gradscope's failure never replaces the program's
            failure, hooks.failure = hooks.failure, None
            if failure is not None:
                self.recorder.notices.extend(
                    failed.findings(self.site, step, failure.nones, failure.causes)
                )
                if not isinstance(error, KeyboardInterrupt):
                    said = failed.message(self.site, type(error).__name__, step, failure.nones,
                                          failure.causes)  # fmt: skip
                    print(said, file=sys.stderr, flush=True)
            elif not isinstance(error, KeyboardInterrupt):  # a NaN check: what came before
                before = failed.before(self.site, type(error).__name__, step,
                                       self.recorder.findings())  # fmt: skip
                if before:
                    print(before, file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            installed.undo(self.model)
        self._kept = None
        try:
            self.recorder.close()
        except OSError as unwritten:  # said; the recorded steps are kept elsewhere
            saved = rescue(self.recorder.to_dict(), str(self.recorder.timeline), unwritten)
            print(saved, file=sys.stderr, flush=True)
        except Exception:  # never a new error in place of the program's
            pass

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        # The execution before has finished: collect it here rather than in on_train_batch_end,
        # which would make Keras turn every step's logs into Python numbers synchronously.
        self._stepping = True
        if self._hooks is None or self._jax is not None:
            return
        self._batches += self._per_call
        if self._pending:
            self._collect()
        if self._per_call > 1:  # a partial execution at an epoch's end: count exactly
            self._next = self._hooks.step() + 1
        every, last = self.recorder.every, self._next + self._per_call - 1
        # a due step in this execution: step 1 or a multiple of every
        self._pending = self._next == 1 or last // every > (self._next - 1) // every
        self._next += self._per_call

    def _collect(self) -> None:
        """Record the due steps the last execution stashed (each in its own row)."""
        hooks = self._hooks
        self._pending = False
        found = hooks.fetch(after=self._last)
        if found:
            self._untracked(hooks.untracked, found[0].step)
        for snap in found:
            self._last = snap.step + 1
            entries, losses, dots, loss = _summaries(hooks, snap)
            whole = {name: snap.raw.get(("", name)) for name in hooks.names}
            self.recorder.record(
                snap.step, self.site, loss, entries, losses=losses or None, dots=dots,
                gradients=whole if snap.raw else None, loss_scaled=hooks.loss_scaled(),
                origins=hooks.origins.pop(snap.step, None),
            )  # fmt: skip

    def _untracked(self, held: Any, step: int) -> None:
        """A ``never-trained`` finding for each tf.Variable Keras does not track that the
        step reads, as ``gradscope run`` reports it (once per variable and fit line)."""
        from gradscope._src.analysis.fixes import Context
        from gradscope._src.results.causes import Untracked

        said = {(f["site"], f["variable"], f["kind"]) for f in self.recorder.notices}
        for name, attribute in held:
            if (self.site, name, "never-trained") in said:
                continue
            cause = Untracked(names=(name, attribute), line=self.site)
            fix = cause.fix(Context("excluded", name, site=self.site))
            self.recorder.notices.append({
                "kind": "never-trained", "site": self.site, "variable": name,
                "from_step": step, "message": f"{name}: {cause}", "fix": fix.to_dict(),
            })  # fmt: skip

    def on_train_end(self, logs: Any = None) -> None:
        if self._jax is not None:
            self._jax.end(self.model)
        installed = self._installed
        if self._hooks is not None and installed is not None:
            if self._pending:
                self._collect()
            # Keras' own function back: a later fit without the Monitor runs as it would have.
            self._kept = (self.model, self._hooks, self._recording, installed.plain, self._flags)
            if not self._hooks.names and self._batches >= self.recorder.every:
                at = Location.parse(self.site) or Location(self.site)  # the user's fit(...)
                warnings.warn_explicit(_NOTHING_APPLIED, UserWarning, at.file, at.line)
            installed.undo(self.model)
        try:
            self.recorder.close()
        except OSError as error:  # the recorded steps are kept, and the message says where
            raise rescue(self.recorder.to_dict(), str(self.recorder.timeline), error) from None
        self._say_findings()

    def _say_findings(self) -> None:
        """One line on standard error when this fit found what no earlier fit's line named."""
        with contextlib.suppress(Exception):  # never a new error at the end of a good fit
            found = self.recorder.findings()
            new = [f for f in found if _key(f) not in self._said]
            if new:
                self._said.update(_key(f) for f in new)
                print(ended_line(self.site, new), file=sys.stderr, flush=True)


def _key(finding: dict[str, Any]) -> tuple[str, str, str]:
    return (str(finding["site"]), str(finding["variable"]), str(finding["kind"]))


_ACTIVE = "_gradscope_monitor"  # the model's _Installed while a Monitor's fit runs
_WHO = "gradscope.keras.Monitor"


class _Installed:
    """What one Monitor put on one model for one fit, and how to take it off again."""

    def __init__(self, monitor: Monitor, hooks: Any, plain: Any, params: Any) -> None:
        self.monitor, self.hooks, self.plain, self.params = monitor, hooks, plain, params

    def undo(self, model: Any) -> None:
        """Keras' own train function and the model's own methods back (idempotent)."""
        self.hooks.remove()
        object.__setattr__(model, "train_function", self.plain)
        if getattr(model, _ACTIVE, None) is self:
            object.__delattr__(model, _ACTIVE)
        if self.monitor._installed is self:
            self.monitor._installed = self.monitor._hooks = None


def _clear(model: Any, params: Any) -> None:
    """Take off what a Monitor left on ``model``: a fit that raised never reached its
    ``on_train_end``. One from this very fit (another Monitor, or the same one listed twice)
    is taken off too, and refused: each wraps the model's step, and two would undo each
    other's wrapping at the end."""
    installed = getattr(model, _ACTIVE, None)
    if installed is None:
        return
    installed.undo(model)
    if params is not None and installed.params is params:
        raise ValueError(
            "gradscope.keras.Monitor: this model already has a Monitor in this fit; one "
            "Monitor per model and fit (each wraps the model's step, and two would undo each "
            "other's wrapping at the end)"
        )


_NOTHING_APPLIED = (
    "gradscope.keras.Monitor recorded no gradient: model.optimizer applied none in this fit "
    "(a custom train_step that applies another optimizer, or a model with no trainable "
    "weights). The Monitor watches model.optimizer only; to see every gradient call of a "
    "step with optimizers of its own (a GAN's), wrap the fit in `with gradscope.watch():` "
    "or run the script with `gradscope run`."
)


def _close_at_exit(monitor: weakref.ref[Monitor]) -> None:
    """Write what a Monitor recorded since its last ``fit`` ended (nothing when it ended)."""
    alive = monitor()
    if alive is not None:
        with contextlib.suppress(Exception):  # the interpreter is exiting: never a new error
            alive._settle()
            try:
                alive.recorder.close()
            except OSError as error:  # said, and the steps kept elsewhere
                saved = rescue(alive.recorder.to_dict(), str(alive.recorder.timeline), error)
                print(saved, file=sys.stderr)


def _summaries(hooks: Any, snap: Any) -> tuple[list[Any], dict[str, Any], dict[Any, Any], float]:
    """The recorder's entries of a due step: :class:`Summary` rows, reduced in the traced
    step (also when the gradients themselves were kept for histograms: the statistics are
    the same with or without them, ``sparse`` included)."""
    total = snap.sums["total"]
    entries, losses, dots = [], {}, {}
    for i, name in enumerate(hooks.names):
        shape = hooks.shapes[name]
        grad: Any = None
        if name not in hooks.nones:
            grad = Summary(float(total[i, 0]), int(total[i, 1]), shape, name in hooks.sparse)
        cause = hooks.causes.get(name)
        why = (cause.status, cause.why, cause.cut_points, cause.cause) if cause else ()
        if grad is not None and grad.size and grad.zeros == grad.size:  # all zero: say why
            note = hooks.zero_notes().get(name, "")
            why = ("zero", note, (), None) if note else ()
        entries.append((name, grad, Summary(float(total[i, 2]), 0, shape), *why))
    for p, part in enumerate(hooks.parts):
        rows, part_entries = snap.sums["parts"][p], []
        for i, n in enumerate(hooks.names):
            if (part, n) not in hooks.part_nones:
                part_entries.append(
                    (n, Summary(float(rows[i, 0]), int(rows[i, 1]), hooks.shapes[n]))
                )
                continue
            cause = hooks.part_causes.get((part, n))
            why = (cause.status, cause.why, cause.cut_points, cause.cause) if cause else ()
            part_entries.append((n, None, None, *why))
        losses[part] = (snap.parts[part], part_entries)
    pairs = [(a, b) for i, a in enumerate(hooks.parts) for b in hooks.parts[i + 1 :]]
    for k, pair in enumerate(pairs):
        dots[pair] = {n: float(snap.sums["dots"][k, i]) for i, n in enumerate(hooks.names)}
    return entries, losses, dots, snap.loss


def _device(model: Any) -> str | None:
    """``CPU:0`` or ``GPU:0``: where the model's first variable lives."""
    variables = model.trainable_variables
    if not variables:
        return None
    name = str(getattr(getattr(variables[0], "value", variables[0]), "device", ""))
    return name.rpartition("device:")[2] or None


def _user_line() -> str:
    """``FILE:LINE`` of the innermost frame outside Keras, TensorFlow and gradscope."""
    frame = sys._getframe(1)
    skip = (os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep,)
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith(skip) and "/tensorflow/" not in name and "/keras/" not in name:
            with contextlib.suppress(ValueError):
                name = os.path.relpath(name)
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "fit"
