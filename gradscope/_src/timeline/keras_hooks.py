"""The graph side of the Keras ``Monitor``: every K steps, reduce the train step's gradients.

Keras 3's TensorFlow trainer computes the gradients in ``train_step`` and hands them to
``optimizer.apply`` (``apply_gradients`` calls it; so do custom ``train_step``s). The hooks
wrap, on the model's and optimizer's instances only:

- ``optimizer.apply``: sees the exact gradients (None included) that train the model, and
  under a strategy ``_all_reduce_sum_gradients`` the replicas' sum it applies;
- ``model.compute_loss``: sees the total loss and, through the compiled loss's per-output
  functions and ``model.losses``, each part of it (several outputs, ``add_loss``,
  regularizers);
- ``model.train_step``: runs the step and then, in a ``tf.cond`` on step 1 or
  the step number ``% every == 0``, reduces each gradient and weight to a few float64
  numbers (sum of squares, zero elements) into the row of one record variable that the
  step has within its execution (``steps_per_execution``); per loss part, its
  gradients come from the step's own graph (``tf.gradients``' helper, built in the branch;
  eagerly, from a persistent tape around the step), so dropout masks and batch-norm
  statistics are the step's own.

Nothing of the training changes: the same ops compute the same update, and the recording
runs only on the steps it is due. On a due step whose gradients are not all finite, a branch
of its own takes the gradient of every tensor on the paths of the step's ``tape.gradient``
and finds where the NaN first appeared, as ``gradscope run`` does (``_origin``).
Under XLA (``jit_compile``) the recording runs on every step (and no origin is looked for), outside
any ``tf.cond``, and writes its row only on due steps: a ``tf.cond`` would make XLA store the
gradients it feeds the optimizer's fusions, changing their rounding (``values.py`` of
``gradscope run`` says how). Keras traces this step once per ``fit`` (the
first trace, which creates the record variable, is thrown away by TensorFlow and builds no
recording).
The record lives in a ``tf.Variable`` made outside the model (``tf.init_scope``), so it is
never saved with it; whole gradients are copied aside only for TensorBoard histograms.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from gradscope._src import patching, tfcompat
from gradscope._src.frontends import keras_names
from gradscope._src.results.causes import NeverRead
from gradscope._src.timeline import step_grads
from gradscope._src.timeline import step_ops as ops
from gradscope._src.watcher import reads
from gradscope._src.watcher.analyse import Recorded
from gradscope._src.watcher.sites import variable_name


@dataclass
class _Trace:
    """What one trace of the train step saw (symbolic tensors in graph mode)."""

    applied: list[tuple[Any, Any]] = field(default_factory=list)  # (gradient, variable)
    loss: Any = None
    parts: list[tuple[str, Any, Any]] = field(default_factory=list)  # (name, value, weight)
    added: list[Any] = field(default_factory=list)  # model.losses: add_loss, regularizers
    y_pred: Any = None  # the predictions compute_loss received
    called: Any = None  # what the model's last call in the step returned (a custom step)
    reduced: list[tuple[Any, Any]] = field(default_factory=list)  # all-reduced (grad, tf var)
    scale: Any = None  # the loss scale applied gradients are divided by (mixed precision)
    summed: list[bool] = field(default_factory=list)  # per applied: the replicas' sum
    tapes: list[Any] = field(default_factory=list)  # the step's tape.gradient calls (traced)


class Hooks:
    """Installs the wrappers on ``model`` and reads back what the due steps stashed."""

    def __init__(self, model: Any, every: int, per_loss: bool = True, raw: bool = False) -> None:
        self.model, self.every, self.per_loss, self.raw = model, int(every), per_loss, raw
        self.optimizer = model.optimizer
        # One row per step of an execution (steps_per_execution): each due step of it keeps
        # its own numbers, in the row of its step within the execution.
        self.rows = max(int(getattr(model, "steps_per_execution", 1) or 1), 1)
        # A due step's numbers in one float64 row (one read per execution): the step, the
        # loss, "total" [n, 3], "parts" [P, n, 2], "dots" [pairs, n], the P parts' values.
        self.record: tf.Variable | None = None  # [rows, size]; a copy per replica (strategy)
        # The step counter: every train step adds one, a step the optimizer skipped too (mixed
        # precision's loss scale skips overflowing steps without advancing optimizer.iterations)
        self.counter: tf.Variable | None = None  # int64 scalar; a copy per replica
        self.start = int(self.optimizer.iterations.numpy())  # the steps before this fit
        self.stash: dict[tuple[str, str], tf.Variable] = {}  # (part or "", path): [rows, *shape]
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.names: list[str] = []  # paths of the variables the step applies, in order
        self.nones: set[str] = set()
        self.part_nones: set[tuple[str, str]] = set()  # (loss part, variable): no gradient
        self.part_causes: dict[tuple[str, str], Recorded] = {}  # why (graph mode)
        self.causes: dict[str, Recorded] = {}  # why a variable gets no gradient (graph mode)
        #: ``(name, attribute)`` of each tf.Variable Keras does not track that the step's tape
        #: read and asked no gradient for (``graph_calls.untracked``)
        self.untracked: tuple[tuple[str, str], ...] = ()
        #: step -> where each non-finite gradient's NaN first appeared (``_origin``), by name
        self.origins: dict[int, dict[str, Any]] = {}
        self.sparse: set[str] = set()
        self.parts: list[str] = []
        self._local = threading.local()  # the trace of this thread (a replica's, mirrored)
        self._fetch: tuple[Any, Any] | None = None
        self._patches = patching.Patches()  # on the model's and optimizer's instances
        self._eager_causes = False  # run_eagerly: the step traced once for the Nones' causes
        #: the traced step's tape call, its variables and their Nones (``zero_notes``)
        self._zero_call: tuple[Any, list[Any], list[bool]] | None = None
        self._zero_notes: dict[str, str] | None = None
        #: what the last step that raised asked gradients for, and which it got none for
        self.failure: Failure | None = None
        keras_names.saw(model)  # its attributes name its variables, as ``gradscope run``'s fit
        self.install()

    @property
    def _trace(self) -> _Trace | None:
        return getattr(self._local, "trace", None)

    @_trace.setter
    def _trace(self, trace: _Trace | None) -> None:
        self._local.trace = trace

    # -- installing -------------------------------------------------------------------------

    def install(self) -> None:
        """Wrap the model's and optimizer's methods (again, after :meth:`remove`): they act
        only while the train step is traced."""
        if self._patches.active():
            return
        patches, model, optimizer = self._patches, self.model, self.optimizer
        patches.set("<optimizer>.apply", lambda apply: lambda grads, variables=None: (
            self._apply(apply, grads, variables)), owner=optimizer, everywhere=True)  # fmt: skip
        patches.set("<model>.train_step", lambda step: lambda data: self._train_step(step, data),
                    owner=model, everywhere=True)  # fmt: skip
        if getattr(optimizer, "_all_reduce_sum_gradients", None) is not None:
            # Keras' TensorFlow optimizer: sums the replicas' gradients
            patches.set("<optimizer>._all_reduce_sum_gradients",
                        lambda reduce: lambda pairs: self._all_reduced(reduce, pairs),
                        owner=optimizer, everywhere=True)  # fmt: skip
        patches.set("<model>.compute_loss",
                    lambda compute: lambda *a, **k: self._compute_loss(compute, a, k),
                    owner=model, everywhere=True)  # fmt: skip
        compiled = getattr(model, "_compile_loss", None)
        if self.per_loss and compiled is not None and hasattr(compiled, "_flat_losses"):
            if compiled.built:
                self._wrap_flat_losses(compiled)
            else:

                def building(build: Any) -> Any:
                    def built(*args: Any) -> None:  # Keras builds the compiled loss in the trace
                        build(*args)
                        self._wrap_flat_losses(compiled)

                    return built

                patches.set("<compiled loss>.build", building, owner=compiled, everywhere=True)

    def remove(self) -> None:
        """Put every wrapped attribute back as it was."""
        self._patches.undo()

    def _wrap_flat_losses(self, compiled: Any) -> None:
        flat = list(compiled._flat_losses)
        wrapped = [
            entry._replace(
                loss=self._part(entry.loss, entry.name or f"output_{i}", entry.loss_weights)
            )
            for i, entry in enumerate(flat)
        ]
        self._patches.set_value("<compiled loss>._flat_losses", wrapped, owner=compiled)

    def _part(self, fn: Any, name: str, weight: Any) -> Any:
        def loss(*args: Any, **kwargs: Any) -> Any:
            value = fn(*args, **kwargs)
            if self._trace is not None:
                self._trace.parts.append((name, value, weight))  # weighted on due steps only
            return value

        return loss

    # -- inside the train step --------------------------------------------------------------

    def _apply(self, apply: Any, grads: Any, variables: Any) -> Any:
        if self._trace is not None and variables is not None:
            grads, variables = list(grads), list(variables)
            # unscaled on due steps only, inside the recording (a division here would be one
            # more reader of each gradient: ``reads.py``); the scale is read now, before the
            # optimizer updates it
            self._trace.scale = step_grads.scale(self.optimizer)
            self._trace.applied.extend(zip(grads, variables, strict=False))
        return apply(grads, variables)

    def _all_reduced(self, reduce: Any, pairs: Any) -> Any:
        out = reduce(pairs)
        if self._trace is not None and tf.distribute.get_strategy().num_replicas_in_sync > 1:
            self._trace.reduced = list(out)
        return out

    def _compute_loss(self, compute: Any, args: Any, kwargs: Any) -> Any:
        total = compute(*args, **kwargs)
        if self._trace is not None and kwargs.get("training", True):
            self._trace.loss = total
            self._trace.added = list(self.model.losses)
            self._trace.y_pred = kwargs.get("y_pred", args[2] if len(args) > 2 else None)
        return total

    def _train_step(self, step: Any, data: Any) -> Any:
        self._trace = trace = _Trace()
        # Per-loss gradients come from the step's own graph (TensorFlow's graph gradients,
        # built on due steps only); eagerly (run_eagerly) a tape must watch the step.
        tape = tf.GradientTape(persistent=True) if tf.executing_eagerly() else None
        try:
            with (tape if tape is not None else contextlib.nullcontext(), _tapes(trace),
                  _model_calls(self.model, trace)):  # fmt: skip
                logs = step(data)
        except BaseException as error:  # the step's own exception goes on unchanged, after a look
            self._trace = None
            if not isinstance(error, KeyboardInterrupt):  # Ctrl-C: at once, no more tracing
                self._failed(trace, step, data)
            raise
        finally:
            self._trace = None
        if trace.loss is None and isinstance(logs, dict) and "loss" in logs:
            trace.loss = logs["loss"]  # a custom train_step: the loss it reports
        _unapplied(trace)
        if not trace.applied:  # nothing trained (no trainable weights): nothing to record
            return logs
        if trace.reduced:  # replicas: record the sum the optimizer applies, not this replica's
            summed = {id(v): g for g, v in trace.reduced}
            trace.summed = [id(getattr(v, "value", v)) in summed for _, v in trace.applied]
            trace.applied = [(summed.get(id(getattr(v, "value", v)), g), v)
                             for g, v in trace.applied]  # fmt: skip
        if self._variables(trace) and not tf.executing_eagerly():
            return logs  # this trace is thrown away: TensorFlow traces the step again
        self._explain(trace)
        variables = [v for _, v in trace.applied]
        self._zero_call = (_asked(trace.tapes, variables), variables,
                           [g is None for g, _ in trace.applied])  # fmt: skip
        self.untracked = _untracked(self._zero_call[0])
        self._zero_notes = None
        assert self.counter is not None  # made by _variables
        iterations = tf.convert_to_tensor(self.counter.assign_add(1))  # this step, from 1
        handles = [step_grads.handle(v) for _, v in trace.applied] if tape is None else []
        due = ops.due(iterations, self.every)
        if _compiled(self.model):
            self._store(trace, step_grads.of_step(tape, handles), iterations, due)
        else:
            # what the step computes as it would unwatched: the recording reads copies of
            # the tensors fewer than two of the step's ops read (``reads.py``)
            program = reads.Program(tf.compat.v1.get_default_graph())

            def record() -> Any:
                return self._store(trace, step_grads.of_step(tape, handles), iterations)

            done = tf.cond(due, reads.branch(program, record), lambda: tf.constant(False))
            _unlowered(done)
        if tape is not None and (self.nones or self.part_nones) and not self._eager_causes:
            self._eager_causes = True  # once: an eager step leaves no graph, one is traced
            self._explain_eagerly(step, data)
        return logs

    def _failed(self, trace: _Trace, step: Any, data: Any) -> None:
        """What a step that raised asked gradients for and got none for, and why, kept in
        :attr:`failure` for the Monitor to say before the exception goes on (Keras' "No
        gradients provided for any variable", a custom step's ``g * 0.5`` on a None): the
        pairs the optimizer was handed, or else the last ``tape.gradient`` that gave a None.
        Eagerly (``run_eagerly``) the step is traced once more for the causes, never run.
        gradscope's own failure here never replaces the step's exception."""
        self.failure = None
        try:
            if tf.executing_eagerly():  # no graph: the step traced once more, never run
                seen = self._traced_once(step, data, partial=True)
                if seen is None:
                    return
                trace = seen
            _asked_pairs(trace)
            nones = [g is None for g, _ in trace.applied]
            if not any(nones):
                return
            self.causes = {}
            self._explain(trace)
            names = [variable_name(v) for _, v in trace.applied]
            self.failure = Failure(tuple(n for n, none in zip(names, nones, strict=True) if none),
                                   dict(self.causes))  # fmt: skip
        except Exception:  # the program's exception is what goes on
            self.failure = None

    def _explain(self, trace: _Trace) -> None:
        """The cause of each None gradient, from the traced step (eagerly, from a trace made
        for it: :meth:`_explain_eagerly`), asked of the watcher's analysis of a traced step
        (``watcher/graph_calls.step_causes``)."""
        from gradscope._src.watcher.graph_calls import step_causes, tape_causes

        nones = [g is None for g, _ in trace.applied]
        variables = [v for _, v in trace.applied]
        asked = _asked(trace.tapes, variables)
        symbolic = trace.loss is not None and tf.is_symbolic_tensor(trace.loss)
        if not any(nones) or (asked is None and not symbolic):
            return
        # a custom train_step need not call compute_loss: its own call of the model made
        # the predictions, so an output no loss reads is named as `gradscope run` names it
        y_pred = trace.y_pred if trace.y_pred is not None else trace.called
        try:
            if asked is not None:  # what `gradscope run` says of the same tape.gradient
                found = tape_causes(asked, variables, nones, self.model, y_pred)
            else:
                found = step_causes(trace.loss, variables, nones, self.model, y_pred)
        except Exception:  # gradscope's failure never stops training: the None stays unexplained
            return
        self.causes = {variable_name(variables[i]): cause for i, cause in found.items()}

    def zero_notes(self) -> dict[str, str]:
        """Per variable, what ``gradscope run`` says of its gradient when it is all zero (a
        ``tf.cond`` branch not taken, an underflow), from the traced step's tape call;
        analysed once, when a step first records a gradient all zero (graph mode)."""
        if self._zero_notes is None:
            from gradscope._src.watcher.graph_calls import tape_zero_notes

            self._zero_notes = {}
            call, variables, nones = self._zero_call or (None, [], [])
            if call is not None:
                try:
                    found = tape_zero_notes(call, variables, nones)
                except Exception:  # gradscope's failure never stops training: no note
                    found = {}
                self._zero_notes = {variable_name(variables[i]): n for i, n in found.items()}
        return self._zero_notes

    def _explain_part(
        self, part: Any, variables: list[Any], nones: list[bool], trace: _Trace
    ) -> None:
        """The cause of each None gradient of one loss part (a loss that does not reach a
        variable: an output it does not read, a cut on its path; the added losses, each
        regularizer and ``add_loss`` term a target, asked all at once)."""
        from gradscope._src.watcher.graph_calls import step_causes

        if not any(nones) or not part.targets or not tf.is_symbolic_tensor(part.targets[0]):
            return
        added = part.name == step_grads.ADDED  # regularizers and add_loss read no output
        model = None if added else self.model
        try:
            found = step_causes(part.targets, variables, nones, model, trace.y_pred, part.name)
        except Exception:  # gradscope's failure never stops training: the None stays unexplained
            return
        for i, cause in found.items():
            if added and not cause.why:
                said = NeverRead(added=True)
                cause = Recorded(cause.status, str(said), cause.cut_points, said)
            self.part_causes[(part.name, variable_name(variables[i]))] = cause

    def _explain_eagerly(self, step: Any, data: Any) -> None:
        """The causes of the None gradients the eager steps (``run_eagerly``) recorded: an
        eager step leaves no graph to analyse, so Keras' own ``train_step`` is traced once
        more into a ``tf.function`` graph on the same batch, with these hooks watching it,
        and that graph is analysed as a traced step's is. It is never run: no weight,
        optimizer or metric state changes.

        Args:
            step: Keras' own ``train_step`` (unwrapped).
            data: the step's batch.
        """
        traced = self._traced_once(step, data)
        if traced is None or traced.loss is None or not traced.applied:
            return
        self._explain(traced)
        if not self.part_nones:
            return
        variables = [v for _, v in traced.applied]
        names = [variable_name(v) for v in variables]
        with traced.loss.graph.as_default():
            parts = step_grads.parts(traced) if self.per_loss else []
            for part in parts:
                nones = [(part.name, n) in self.part_nones for n in names]
                self._explain_part(part, variables, nones, traced)

    def _traced_once(self, step: Any, data: Any, partial: bool = False) -> _Trace | None:
        """What the hooks saw while ``step`` was traced on ``data`` (None: it could not be;
        with ``partial``, what they saw up to where the trace raised)."""
        seen = []

        def traced_step(batch: Any) -> Any:
            self._trace = trace = _Trace()
            try:
                with _tapes(trace):
                    step(batch)
            finally:  # a step that raises is seen up to where it raised
                self._trace = None
                seen.append(trace)
            return tf.constant(0)

        try:
            tf.function(traced_step, autograph=False).get_concrete_function(data)
        except Exception:  # gradscope's failure never stops training: the Nones stay unexplained
            if not partial:  # (a step that raises eagerly raises traced too: seen up to there)
                return None
        return seen[-1] if seen else None

    def _store(self, trace: _Trace, gradients: Any, iterations: Any, when: Any = None) -> Any:
        """On a due step: each gradient reduced to (sum of squares, zeros) in float64, the
        weight's sum of squares, per loss part the same and the dot products between parts
        (and, with ``raw``, the gradients themselves for histograms). Few ops per variable:
        tracing them costs little."""
        grads, variables = [g for g, _ in trace.applied], [v for _, v in trace.applied]
        unscaled = step_grads.unscaled(self.optimizer, grads, variables, trace.scale)
        grads = [g if summed else u  # a replicas' sum: as the optimizer applies it
                 for g, u, summed in zip(grads, unscaled, trace.summed or [False] * len(grads),
                                         strict=True)]  # fmt: skip
        self.names = [variable_name(v) for v in variables]
        row = (iterations - 1) % self.rows  # the step's row within its execution
        for grad, variable, path in zip(grads, variables, self.names, strict=True):
            self.shapes[path] = tuple(int(d) for d in variable.shape)
            if isinstance(grad, tf.IndexedSlices):
                self.sparse.add(path)
            if grad is None:
                self.nones.add(path)
            elif self.raw:
                _put(self._stash("", path, variable), row, tf.convert_to_tensor(grad), when)
        loss = tf.constant(math.nan) if trace.loss is None else trace.loss
        total = ops.summarize(grads, variables)
        self._origin(total, iterations, when)
        # (stacked, not indexed: each op traced costs, an index four)
        pieces = [tf.stack([tf.cast(iterations, tf.float64), tf.cast(loss, tf.float64)]),
                  tf.reshape(total, [-1])]  # fmt: skip
        parts = step_grads.parts(trace) if self.per_loss else []
        self.parts = [part.name for part in parts]
        wide = []
        for part in parts:
            grads_of = [
                step_grads.weighted(g, part.weight) for g in gradients(part.targets, variables)
            ]
            nones = [g is None for g in grads_of]
            self.part_nones.update(
                (part.name, n) for n, none in zip(self.names, nones, strict=True) if none
            )
            self._explain_part(part, variables, nones, trace)
            wide.append([None if g is None else ops.wide(g) for g in grads_of])
        if wide:
            pieces.append(tf.reshape(tf.stack([ops.summarize(w) for w in wide]), [-1]))
            pairs = [ops.dots(a, b) for a, b in itertools.combinations(wide, 2)]
            pieces.append(tf.reshape(tf.stack(pairs), [-1]))
            pieces.append(tf.cast(tf.stack([part.value for part in parts]), tf.float64))
        assert self.record is not None  # made by _variables
        _put(self.record, row, tf.concat(pieces, 0), when)  # this replica's copy
        return tf.constant(True)

    def _origin(self, total: Any, iterations: Any, when: Any) -> None:
        """On a due step whose gradients are not all finite: where the NaN or infinity first
        appeared, as ``gradscope run`` finds it for the step's ``tape.gradient``
        (``graph_calls.step_origins``), kept in :attr:`origins` by step. Not under XLA (no
        ``py_function`` compiles) nor across replicas (a replica's gradients are not the
        applied sum)."""
        call = self._zero_call[0] if self._zero_call is not None else None
        if call is None or not call.grads or when is not None or _replicas() > 1:
            return
        from gradscope._src.watcher.graph_calls import step_origins

        def found(step: int, origins: dict[str, Any]) -> None:
            self.origins[step] = origins

        def look() -> Any:
            step_origins(call, iterations, found)
            return tf.constant(True)

        finite = tf.reduce_all(tf.math.is_finite(total[:, 0]))
        _unlowered(tf.cond(finite, lambda: tf.constant(False), look))

    def _variables(self, trace: _Trace) -> bool:
        """Make the variables a due step of this trace writes; whether any was new. In a
        ``tf.function``, a trace that creates variables is traced again (TensorFlow runs only
        the second trace), so the first needs no recording ops."""
        before = len(self.stash) + (self.record is not None) + (self.counter is not None)
        if self.counter is None:
            self.counter = ops.local_variable([], tf.int64, "gradscope_step", self.start)
        n = len(trace.applied)
        parts = len(step_grads.parts(trace, build=False)) if self.per_loss else 0
        size = 2 + 3 * n + (2 * parts * n + parts * (parts - 1) // 2 * n + parts)
        if self.record is None or self.record.shape[1] != size:
            self.record = ops.local_variable([self.rows, size], tf.float64, "gradscope_record")
        for grad, variable in trace.applied:
            if grad is not None and self.raw:
                self._stash("", variable_name(variable), variable)
        return len(self.stash) + (self.record is not None) + (self.counter is not None) > before

    def _stash(self, part: str, path: str, variable: Any) -> tf.Variable:
        key = (part, path)
        if key not in self.stash:
            shape = [self.rows, *variable.shape]
            self.stash[key] = ops.local_variable(shape, variable.dtype, "gradscope_stash")
        return self.stash[key]

    # -- read back (eager, from the callback) -----------------------------------------------

    def begin(self, steps: int) -> None:
        """A fit starts after ``steps`` steps (the optimizer's iterations): count on from it."""
        self.start = int(steps)
        if self.counter is not None:
            for copy in ops.copies(self.model, self.counter):
                copy.assign(self.start)

    def step(self) -> int:
        """The last step run (counted as :meth:`begin` set it)."""
        if self.counter is None:
            return self.start
        return int(ops.copies(self.model, self.counter)[0].numpy())

    def loss_scaled(self) -> bool:
        """Whether the optimizer skips steps whose gradients overflow its loss scale."""
        return step_grads.loss_scaled(self.optimizer)

    def fetch(self, after: int = 1) -> list[Snapshot]:
        """The due steps from step ``after`` on that the rows hold, in order, as numpy
        (small: a few values per variable and step)."""
        if self.record is None:
            return []
        copies = [r.numpy() for r in ops.copies(self.model, self.record)]
        raw = {k: ops.copies(self.model, v)[0].numpy() for k, v in self.stash.items()}
        rows = copies[0]
        if len(copies) > 1:  # replicas: the same gradients (all-reduced), their losses add
            rows[:, 1] = sum(c[:, 1] for c in copies)
        found = [
            self._snapshot(rows[r], {k: v[r] for k, v in raw.items()})
            for r in range(rows.shape[0])
            if math.isfinite(rows[r, 0]) and int(rows[r, 0]) >= after
        ]
        return sorted(found, key=lambda snap: snap.step)

    def _snapshot(self, values: Any, raw: dict[tuple[str, str], Any]) -> Snapshot:
        """One row of the record."""
        n, p = len(self.names), len(self.parts)
        ends = list(itertools.accumulate([2, 3 * n, 2 * p * n, p * (p - 1) // 2 * n, p]))
        sums = {"total": values[2 : ends[1]].reshape(n, 3)}
        if p:
            sums["parts"] = values[ends[1] : ends[2]].reshape(p, n, 2)
            sums["dots"] = values[ends[2] : ends[3]].reshape(-1, n)
        parts = dict(zip(self.parts, (float(v) for v in values[ends[3] :]), strict=True))
        return Snapshot(int(values[0]), sums, parts, float(values[1]), raw)


@dataclass(frozen=True)
class Failure:
    """A step that raised: the variables it got no gradient for, and why (by name; a
    variable without a cause was not explained)."""

    nones: tuple[str, ...]
    causes: dict[str, Recorded]


#: Stands for a gradient a step that raised did get (its value was never computed).
_GOT = object()


@dataclass(frozen=True)
class Snapshot:
    """A due step: its number, ``sums`` ("total" [n, 3], "parts" [P, n, 2], "dots" [pairs,
    n]), the loss parts' values, the loss, and with ``raw`` the gradients by (part or "", path)."""

    step: int
    sums: dict[str, Any]
    parts: dict[str, float]
    loss: float
    raw: dict[tuple[str, str], Any]


@contextlib.contextmanager
def _tapes(trace: _Trace) -> Any:
    """Record in ``trace`` the ``tape.gradient`` calls a traced step makes (none eagerly)."""
    if tf.executing_eagerly():
        yield
        return
    from gradscope._src.watcher.graph_calls import tape_calls

    with tape_calls() as seen:
        try:
            yield
        finally:  # a step that raised keeps the calls it made (``Hooks._failed``)
            trace.tapes = seen


@contextlib.contextmanager
def _model_calls(model: Any, trace: _Trace) -> Any:
    """Record in ``trace`` what ``model``'s own calls inside the step return (a custom
    ``train_step``'s ``self(x, training=True)``), by its class's ``__call__`` for the step's
    run only (in this thread: a replica's step records its own)."""
    me = threading.get_ident()

    def make(original: Any) -> Any:
        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(self, *args, **kwargs)
            if self is model:
                trace.called = out
            return out

        return call

    with patching.Patches(when=lambda: threading.get_ident() == me) as patches:
        patches.set("<model class>.__call__", make, owner=type(model))
        yield


def _asked(tapes: list[Any], variables: list[Any]) -> Any:
    """The last tape call of a step whose sources are every variable the optimizer got
    (``TapeCall``; None: no such call, the variables' gradients came from elsewhere)."""
    wanted = {id(v) for v in variables}
    for call in reversed(tapes):
        if wanted <= {id(s) for s in call.sources}:
            return call
    return None


def _unapplied(trace: _Trace) -> None:
    """Add to what the step applied the variables its tape gave no gradient that it left
    out (a custom ``train_step`` that drops the None pairs before ``apply_gradients``), as
    ``(None, variable)``: ``gradscope run`` reports every source of that ``tape.gradient``,
    so the Monitor does too."""
    applied = {id(v) for _, v in trace.applied}
    call = _asked(trace.tapes, [v for _, v in trace.applied])
    if call is None or not call.nones:
        return
    for source, none in zip(call.sources, call.nones, strict=True):
        if none and id(source) not in applied and hasattr(source, "handle"):
            trace.applied.append((None, source))
            applied.add(id(source))


def _asked_pairs(trace: _Trace) -> None:
    """Make ``trace.applied`` every pair a step that raised asked a gradient for: those
    handed to the optimizer (with the None pairs it left out), or, when it raised before
    (a custom step's ``g * 0.5`` on a None), the sources of its last ``tape.gradient`` that
    gave a None (:data:`_GOT` for those that got one)."""
    _unapplied(trace)
    if trace.applied:
        return
    call = next((c for c in reversed(trace.tapes) if any(c.nones)), None)
    if call is not None:
        trace.applied = [(None if none else _GOT, source) for source, none
                         in zip(call.sources, call.nones, strict=True)
                         if hasattr(source, "handle")]  # fmt: skip


def _put(variable: tf.Variable, row: Any, value: Any, when: Any = None) -> None:
    """Write ``value`` into row ``row`` of ``variable`` (the whole of it with one row);
    with ``when`` (a boolean tensor), only where it holds (the row is written back as it was
    where it does not)."""
    if when is not None:
        value = tf.where(when, value, tf.gather(variable, row))
    if variable.shape[0] == 1:
        variable.assign(tf.expand_dims(value, 0))
        return
    variable.assign(tf.tensor_scatter_nd_update(variable, tf.reshape(row, [1, 1]), value[None]))


def _untracked(call: Any) -> tuple[tuple[str, str], ...]:
    """What ``gradscope run`` reports ``never-trained`` of the step's tape call: the
    variables Keras does not track that it read (none when it cannot say)."""
    from gradscope._src.watcher.graph_calls import untracked

    try:
        return untracked(call) if call is not None else ()
    except Exception:  # gradscope's failure never stops training: nothing said
        return ()


def _replicas() -> int:
    return int(tf.distribute.get_strategy().num_replicas_in_sync)


def _compiled(model: Any) -> bool:
    """Whether the step being traced is compiled by XLA (``jit_compile``)."""
    return not tf.executing_eagerly() and getattr(model, "jit_compile", False) is True


def _unlowered(output: Any) -> None:
    """Keep the ``If`` op of a ``tf.cond`` a function call. TensorFlow otherwise lowers it
    to Switch/Merge, which puts every op of the recording into the train step's own graph:
    optimized and made ready with it before the first step, whether or not a step is ever
    due (a 64-step fit of the bench MLP: 1.15x -> 1.07-1.09x with the Monitor). As a call,
    the branch is made ready when the ``If`` first runs; a step costs the same either way
    (~10 microseconds for the condition)."""
    if tf.executing_eagerly():
        return
    control_flow_util_v2 = tfcompat.get("control_flow_util_v2")

    op = output.op
    while op.type == "Identity":
        op = op.inputs[0].op
    if op.type in ("If", "StatelessIf"):
        control_flow_util_v2.maybe_set_lowering_attr(op, lower_using_switch_merge=False)
