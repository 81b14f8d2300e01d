"""The watched APIs, patched for the length of a run and restored after (contract section 6).

Each patch calls TensorFlow's own function with the program's own arguments and returns its
result unchanged; what gradscope adds runs beside it (``calls.py``).
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gradscope._src.frontends import keras_names
from gradscope._src.frontends.program import copies, fit, process, sites, trainable
from gradscope._src.frontends.program.calls import Calls
from gradscope._src.frontends.program.watch import Watcher
from gradscope._src.frontends.python import keras_ops

_NONE = object()
#: Lines of eager variables and constants kept at most (``Recorder.created``).
MADE = 100_000
#: Held while the APIs are patched: one watcher per process (``AlreadyWatching``).
_ONE = threading.Lock()


@contextmanager
def installed(watcher: Watcher) -> Iterator[Calls]:
    """Patch every watched API while the block runs; eager ops are recorded until every eager
    call site has had its ``--steps``. Calls are watched in this thread of this process
    only (``process.py``).

    Args:
        watcher: where results go.

    Raises:
        AlreadyWatching: another watcher has the APIs patched (nothing is patched twice).
    """
    from gradscope._src.errors import AlreadyWatching

    if not _ONE.acquire(blocking=False):
        raise AlreadyWatching(
            "gradscope is already watching gradient calls in this process (a gradscope.watch() "
            "block, here or in another thread, or gradscope run): one watcher at a time"
        )
    calls = Calls(watcher)
    undo: list[Callable[[], None]] = []
    try:
        for patch in (_tape, _gradients, _optimizer_v1, _session, _function, _keras,
                      _loss_scale, _trace_end, _apply_gradients, _replica_threads,
                      _constants, _numpy_function, _copies, _keras_ops):  # fmt: skip
            undo.append(patch(calls))
        calls.recorder.install()
        with process.watching():  # this thread, this process (process.py)
            yield calls
    finally:
        try:
            calls.recorder.uninstall()
            for restore in reversed(undo):
                restore()
        finally:
            _ONE.release()


def _keras_ops(calls: Calls) -> Callable[[], None]:
    """The lines that wrote a functional model's Keras operations, in their ops' stacks
    (``keras_ops.py``): a cut at ``keras.ops.stop_gradient`` names its line."""
    keras_ops.install()
    return keras_ops.uninstall


def _replace(owner: Any, name: str, make: Callable[[Any], Any]) -> Callable[[], None]:
    """Set ``owner.name`` to ``make(original)``; returns what restores it."""
    own = name in owner.__dict__
    original = owner.__dict__[name] if own else getattr(owner, name)
    patched = make(original)
    functools.update_wrapper(patched, original)
    setattr(owner, name, patched)
    if own:
        return lambda: setattr(owner, name, original)
    return lambda: delattr(owner, name)


def _tape(calls: Calls) -> Callable[[], None]:
    from tensorflow.python.eager import backprop

    tape_class = backprop.GradientTape
    watcher = calls.watcher

    def gradient(orig: Any) -> Any:
        def patched(self: Any, target: Any, sources: Any, output_gradients: Any = None,
                    unconnected_gradients: Any = _NONE) -> Any:  # fmt: skip
            import tensorflow as tf

            unconnected = (tf.UnconnectedGradients.NONE if unconnected_gradients is _NONE
                           else unconnected_gradients)  # fmt: skip
            try:  # TensorFlow accepts the enum's value too ("zero"): compare as it does
                unconnected = tf.UnconnectedGradients(unconnected)
            except ValueError:  # TensorFlow's own error, raised by its own call
                return orig(self, target, sources, output_gradients, unconnected)
            if watcher.busy or self._tape is None:
                _elsewhere(watcher)
                return orig(self, target, sources, output_gradients, unconnected)
            return calls.tape_gradient(orig, self, target, sources, output_gradients,
                                       unconnected)  # fmt: skip

        return patched

    def push(orig: Any) -> Any:
        def patched(self: Any) -> Any:
            result = orig(self)
            if not watcher.busy:
                calls.push(self)
            return result

        return patched

    def pop(orig: Any) -> Any:
        def patched(self: Any) -> Any:
            calls.pop(self)
            return orig(self)

        return patched

    def unwatched(orig: Any) -> Any:
        # jacobian and batch_jacobian call gradient once per element of the target (in a
        # while_loop or vectorised by pfor): those are TensorFlow's calls, not the program's
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not watcher.busy:
                note = (f"{sites.text(sites.current())}: GradientTape.{orig.__name__} is not "
                        "watched (only GradientTape.gradient is); it ran as written")  # fmt: skip
                if note not in watcher.notes:
                    watcher.notes.append(note)
            with watcher.own_work():
                return orig(self, *args, **kwargs)

        return patched

    undo = [
        _replace(tape_class, "gradient", gradient),
        _replace(tape_class, "jacobian", unwatched),
        _replace(tape_class, "batch_jacobian", unwatched),
        _replace(tape_class, "_push_tape", push),
        _replace(tape_class, "_pop_tape", pop),
    ]
    return _undo_all(undo)


def _gradients(calls: Calls) -> Callable[[], None]:
    from tensorflow.python.ops import gradients_util

    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(ys: Any, xs: Any, *args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            grads = orig(ys, xs, *args, **kwargs)
            if watcher.busy or tf.executing_eagerly() or not _from_api(sys._getframe(1)):
                _elsewhere(watcher)
                return grads
            stops = kwargs.get("stop_gradients", args[5] if len(args) > 5 else None)
            calls.guarded(calls.graph_gradients, orig, "tf.gradients", _listed(ys), _listed(xs),
                          list(grads), _listed(stops))  # fmt: skip
            return grads

        return patched

    return _replace(gradients_util, "_GradientsHelper", make)


def _optimizer_v1(calls: Calls) -> Callable[[], None]:
    import sys

    from tensorflow.python.ops import gradients_util
    from tensorflow.python.training import optimizer

    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(self: Any, loss: Any, var_list: Any = None, *args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            if watcher.busy or tf.executing_eagerly() or callable(loss):
                return orig(self, loss, var_list, *args, **kwargs)
            with watcher.own_work():
                pairs = orig(self, loss, var_list, *args, **kwargs)
            caller = sys._getframe(1).f_code.co_name
            api = "minimize" if caller == "minimize" else "compute_gradients"
            helper = gradients_util._GradientsHelper
            helper = getattr(helper, "__wrapped__", helper)
            calls.guarded(calls.graph_gradients, helper, api, [loss], [v for _, v in pairs],
                          [g for g, _ in pairs], [], var_list is None)  # fmt: skip
            return pairs

        return patched

    return _replace(optimizer.Optimizer, "compute_gradients", make)


def _session(calls: Calls) -> Callable[[], None]:
    from tensorflow.python.client import session

    def make(orig: Any) -> Any:
        def patched(self: Any, fetches: Any, *args: Any, **kwargs: Any) -> Any:
            return calls.sessions.run(orig, self, fetches, *args, **kwargs)

        return patched

    return _replace(session.BaseSession, "run", make)


def _function(calls: Calls) -> Callable[[], None]:
    from tensorflow.python.eager.polymorphic_function import polymorphic_function as pf

    def make(orig: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls.before_function(self)
            stack = calls.calling()
            stack.append(self)
            try:
                return orig(self, *args, **kwargs)
            finally:
                stack.pop()
                if not stack:  # the outermost call: read what XLA-compiled sites wrote
                    calls.guarded(calls.boxes.after_call)

        return patched

    return _replace(pf.Function, "__call__", make)


def _copies(calls: Calls) -> Callable[[], None]:
    """Note variables the program assigns another variable's value (``copies.py``)."""
    copies.clear()
    return _undo_all([_replace(owner, name, make) for owner, name, make in copies.patches()])


def _keras(calls: Calls) -> Callable[[], None]:
    try:
        import keras
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return lambda: None

    def make_call(orig: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            with fit.model_call() as outermost:
                outputs = orig(self, *args, **kwargs)
            if outermost and not calls.watcher.busy:
                fit.saw_outputs(self, outputs)
                keras_names.saw(self)
            return outputs

        return patched

    def make_predict(orig: Any) -> Any:
        # predict hands back numpy arrays: a value it took out of TensorFlow is named after it
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            recorder, before = calls.recorder, calls.recorder.taking
            recorder.taking = before or f"model.{orig.__name__}()"
            try:
                return orig(self, *args, **kwargs)
            finally:
                recorder.taking = before

        return patched

    undo = [_replace(keras.Model, "fit", _training(calls, "fit")),
            _replace(keras.Model, "__call__", make_call),
            _replace(keras.Model, "predict", make_predict),
            _replace(keras.Model, "predict_on_batch", make_predict),
            _trainable(calls)]  # fmt: skip
    return _undo_all(undo)


def _training(calls: Calls, api: str) -> Callable[[Any], Any]:
    """The wrapper of ``Model.fit`` or ``Model.train_on_batch`` (``api``): the ``trainable``
    flags compared with the traced step's, then the call inside ``fit``'s state."""

    def make(orig: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            before: list[dict[int, bool]] = []  # the flags at its start (trainable.report)
            calls.guarded(lambda: before.append(trainable.report(calls.watcher, calls.traces,
                                                                 self, api)))  # fmt: skip
            fit.enter(self, api, sites.text(sites.fast_current()))
            keras_names.saw(self)
            try:
                return orig(self, *args, **kwargs)
            finally:
                fit.leave()
                if before:  # flags a callback changed while it ran
                    calls.guarded(trainable.report_during, calls.watcher, calls.traces, self,
                                  api, before[0])  # fmt: skip

        return patched

    return make


def _trainable(calls: Calls) -> Callable[[], None]:
    """``compile()``, Keras' train step and ``train_on_batch()``: the ``trainable`` flags at
    each, compared where they matter (``trainable.py``); ``fit()`` compares in ``_keras``."""
    import keras
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    def make_compile(orig: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = orig(self, *args, **kwargs)
            calls.guarded(calls.traces.compile, self)
            return result

        return patched

    def make(orig: Any) -> Any:
        def patched(self: Any, step_function: Any) -> Any:
            if getattr(step_function, "__name__", "") != "train_step":
                return orig(self, step_function)

            @functools.wraps(step_function)
            def train_step(data: Any) -> Any:
                with calls.traces.step(self):
                    return step_function(data)

            return orig(self, train_step)

        return patched

    undo = [_replace(keras.Model, "compile", make_compile),
            _replace(keras.Model, "train_on_batch", _training(calls, "train_on_batch")),
            _replace(TensorFlowTrainer, "_make_function", make)]  # fmt: skip
    return _undo_all(undo)


def _loss_scale(calls: Calls) -> Callable[[], None]:
    """Keras' ``LossScaleOptimizer.scale_loss``: its result is a scaled loss; the gradients
    of it are reported divided by the scale (unscaled), with the scale shown."""
    from keras.src.optimizers.loss_scale_optimizer import LossScaleOptimizer

    def make(orig: Any) -> Any:
        def patched(self: Any, loss: Any) -> Any:
            scaled = orig(self, loss)
            calls.saw_scaled(scaled, self.dynamic_scale if self.built else self.initial_scale)
            return scaled

        return patched

    return _replace(LossScaleOptimizer, "scale_loss", make)


def _trace_end(calls: Calls) -> Callable[[], None]:
    """The end of a ``tf.function`` body: where the measuring ops are added."""
    from tensorflow.python.framework import auto_control_deps

    def make(orig: Any) -> Any:
        def patched(self: Any, kind: Any, value: Any, tb: Any) -> Any:
            graph = getattr(self, "_graph", None)
            if kind is None and graph is not None:
                calls.end_of_trace(graph)
            elif graph is not None:
                calls.forget(graph)
            return orig(self, kind, value, tb)

        return patched

    return _replace(auto_control_deps.AutomaticControlDependencies, "__exit__", make)


def _apply_gradients(calls: Calls) -> Callable[[], None]:
    """Keras' ``apply_gradients``, where Keras warns "Gradients do not exist for variables"."""
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(self: Any, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
            if watcher.busy or fit.active():
                return orig(self, grads_and_vars, *args, **kwargs)
            pairs = list(grads_and_vars)
            calls.guarded(calls.apply_gradients, pairs)
            return orig(self, pairs, *args, **kwargs)

        return patched

    return _replace(BaseOptimizer, "apply_gradients", make)


def _replica_threads(calls: Calls) -> Callable[[], None]:
    """``MirroredStrategy``'s replica threads start with the ``tf.function`` stack and the
    ``model.fit`` state of the thread running ``strategy.run``."""
    from gradscope._src.frontends.program.replicas import inherit

    return inherit(calls.calling)


def _constants(calls: Calls) -> Callable[[], None]:
    """Eager constants (``tf.constant``, ``tf.convert_to_tensor`` of numpy) run no op the
    recorder sees: the line that made each is kept while eager ops are recorded, to name a
    watched one ``Const@FILE:LINE`` (``names.source_name``)."""
    from tensorflow.python.framework import constant_op

    recorder, watcher = calls.recorder, calls.watcher

    def make(orig: Any) -> Any:
        def patched(value: Any, ctx: Any, dtype: Any = None) -> Any:
            tensor = orig(value, ctx, dtype)
            if recorder.installed and not watcher.busy and len(recorder.created) < MADE:
                recorder.created[tensor._id] = sites.fast_current()
            if recorder.installed and not watcher.busy:
                recorder.made_constant(tensor, value)
            return tensor

        return patched

    return _replace(constant_op, "convert_to_eager_tensor", make)


def _elsewhere(watcher: Watcher) -> None:
    """Note, once per thread, a program's gradient call in a thread it started (unwatched:
    ``process.py``); a forked child reports nothing."""
    if process.watched_here() or process.in_child() or watcher.busy_here():
        return
    note = process.unwatched_thread_note(sites.text(sites.fast_current()))
    with watcher.lock:
        if not any(n.endswith(note.split(": ", 1)[1]) for n in watcher.notes):
            watcher.notes.append(note)


def _numpy_function(calls: Calls) -> Callable[[], None]:
    """``tf.numpy_function`` (and TensorFlow 1's ``py_func``) run eagerly: their inputs leave
    TensorFlow as numpy arrays (no gradient passes them back), at the user's line; no op
    the recorder sees says so. ``tf.py_function`` has a gradient and is left alone."""
    from tensorflow.python.ops import script_ops

    recorder, watcher = calls.recorder, calls.watcher

    def make(orig: Any) -> Any:
        def patched(func: Any, inp: Any, *args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            if recorder.installed and not watcher.busy and tf.executing_eagerly():
                for t in inp if isinstance(inp, (list, tuple)) else [inp]:
                    if hasattr(t, "_id"):  # eagerly, func gets np.array(t) of each input
                        recorder.took(t, "tf.numpy_function()")
            return orig(func, inp, *args, **kwargs)

        return patched

    return _replace(script_ops, "py_func_common", make)


def _from_api(caller: Any) -> bool:
    """Whether ``_GradientsHelper`` was called by ``tf.gradients`` (the program's call), not
    by TensorFlow itself (the backward function of a ``tf.function`` called under a tape)."""
    return bool(caller.f_code.co_filename.endswith("gradients_impl.py"))


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _undo_all(undo: list[Callable[[], None]]) -> Callable[[], None]:
    def restore() -> None:
        for u in reversed(undo):
            u()

    return restore
