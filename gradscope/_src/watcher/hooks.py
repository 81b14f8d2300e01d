"""The watched APIs, patched while a watch lasts and restored after (contract section 6).

Each patch calls TensorFlow's own function with the program's own arguments and returns its
result unchanged; what gradscope adds runs beside it (``calls.py``). Every attribute is set
through the registry (``patching.py``): one lock, undone in reverse, a patch the program made
meanwhile kept. TensorFlow's and Keras' are set once the program has imported them: gradscope
never imports either first (Keras reads ``KERAS_BACKEND`` at its import).

One watch at a time per process: ``gradscope run``, a ``gradscope.watch()`` block or a test
under ``pytest --gradscope``. A watch entered while another lasts (a notebook's
``watch()`` exported to a script under ``gradscope run``, a test that watches itself under
``pytest --gradscope``, a second thread) joins it (:func:`enter`): it shares its patches and
its watcher, its thread is watched too, and it reports the calls made in its own block.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from gradscope._src import patching, tfcompat
from gradscope._src.frontends import keras_names
from gradscope._src.frontends.python import keras_ops
from gradscope._src.watcher import copies, fit, jax_hooks, process, sites, trainable
from gradscope._src.watcher.calls import Calls
from gradscope._src.watcher.watch import Watcher

_NONE = object()
#: Lines of eager variables and constants kept at most (``Recorder.created``).
MADE = 100_000


@dataclass
class Session:
    """One watch of the process: its watcher, its ``Calls``, its patches, and how many
    blocks share them."""

    watcher: Watcher
    calls: Calls
    patches: patching.Patches
    members: int = 0
    installed: list[str] = field(default_factory=list)  # the groups set: tensorflow, keras
    #: JAX's calls (``jax_hooks.install``: JAX, and Keras on JAX, once imported)
    jax: Any = None


@dataclass
class Member:
    """One block of a watch: the first (which made it) or one that joined, in ``thread``."""

    session: Session
    first: bool
    thread: int
    start: int  # the watcher's calls before the block
    sites: int  # its call sites before the block
    watching: Any = None  # process.watching() of the block's thread

    @property
    def calls(self) -> Calls:
        return self.session.calls


_session: list[Session] = []  # the watch now, if any (under patching.LOCK)


def enter(watcher: Callable[[], Watcher]) -> Member:
    """Start watching this thread: a new watch with ``watcher()`` when none lasts (its
    patches set now, or once the program imports TensorFlow), else join the one that does.
    """
    with patching.LOCK:
        first = not _session
        if first:
            made = watcher()
            session = Session(made, Calls(made), patching.Patches(when=process.watched_here))
            _session.append(session)
        session = _session[0]
        session.members += 1
        member = Member(session, first, threading.get_ident(), len(session.watcher.calls),
                        len(session.watcher.sites))  # fmt: skip
    member.watching = process.watching()
    member.watching.__enter__()
    try:
        if first:
            session.patches.wait_for(("tensorflow", "keras"), lambda: _install(session))
            session.jax = jax_hooks.install(session.watcher, session.patches,
                                            session.calls.traces, session.installed)  # fmt: skip
        elif session.calls.recorder.installed:
            session.calls.recorder.add_thread()
    except BaseException:
        leave(member)
        raise
    return member


def leave(member: Member) -> None:
    """End ``member``'s block: its thread is no longer watched (by it); the last block to
    end takes every patch off."""
    session = member.session
    try:
        member.watching.__exit__(None, None, None)
        session.calls.recorder.remove_thread()
    finally:
        with patching.LOCK:
            session.members -= 1
            last = not session.members
            if last:
                _session.clear()
        if last:
            try:
                session.calls.recorder.uninstall()
            finally:
                session.patches.undo()


def watching() -> bool:
    """Whether a watch lasts in this process (``gradscope run``, a ``watch()`` block)."""
    with patching.LOCK:
        return bool(_session)


@contextmanager
def installed(watcher: Watcher) -> Iterator[Member]:
    """Watch this thread while the block runs: the watched APIs patched (now, or when the
    program imports TensorFlow), eager ops recorded until every eager call site has had its
    ``--steps``; calls are watched in this thread of this process only (``process.py``), and
    in the threads of blocks that join it. Inside another watch, ``watcher`` is not used:
    the block joins that watch (its member says so)."""
    member = enter(lambda: watcher)
    try:
        yield member
    finally:
        leave(member)


def _install(session: Session) -> None:
    """Set the watched APIs of TensorFlow (and of Keras, when it runs on TensorFlow): once the
    program has imported them."""
    if "tensorflow" not in sys.modules or session.installed:
        return
    calls, patches = session.calls, session.patches
    session.installed.append("tensorflow")
    for patch in (_tape, _gradients, _optimizer_v1, _session_run, _function, _trace_end,
                  _replica_threads, _constants, _numpy_function):  # fmt: skip
        patch(calls, patches)
    if tfcompat.keras_on_tensorflow():
        session.installed.append("keras")
        for patch in (_keras, _loss_scale, _apply_gradients, _keras_ops):
            patch(calls, patches)
    copies.clear()
    for key, make in copies.patches():
        patches.set(key, make)
    calls.recorder.install()
    for note in calls.recorder.notes:
        if note not in calls.watcher.notes:
            calls.watcher.notes.append(note)


def _keras_ops(calls: Calls, patches: patching.Patches) -> None:
    """The lines that wrote a functional model's Keras operations, in their ops' stacks
    (``keras_ops.py``): a cut at ``keras.ops.stop_gradient`` names its line."""
    keras_ops.install()
    patches.on_undo(keras_ops.uninstall)


def _tape(calls: Calls, patches: patching.Patches) -> None:
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

    patches.set("GradientTape.gradient", gradient, everywhere=True)  # notes other threads'
    patches.set("GradientTape.jacobian", unwatched)
    patches.set("GradientTape.batch_jacobian", unwatched)
    patches.set("GradientTape._push_tape", push)
    patches.set("GradientTape._pop_tape", pop)


def _gradients(calls: Calls, patches: patching.Patches) -> None:
    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(ys: Any, xs: Any, *args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            grads = orig(ys, xs, *args, **kwargs)
            if (
                watcher.busy
                or tf.executing_eagerly()
                or not _from_api(patching.caller(sys._getframe(1)))
            ):
                _elsewhere(watcher)
                return grads
            stops = kwargs.get("stop_gradients", args[5] if len(args) > 5 else None)
            calls.guarded(calls.graph_gradients, orig, "tf.gradients", _listed(ys), _listed(xs),
                          list(grads), _listed(stops))  # fmt: skip
            return grads

        return patched

    patches.set("gradients_util._GradientsHelper", make, everywhere=True)  # notes others'


def _optimizer_v1(calls: Calls, patches: patching.Patches) -> None:
    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(self: Any, loss: Any, var_list: Any = None, *args: Any, **kwargs: Any) -> Any:
            import tensorflow as tf

            if watcher.busy or tf.executing_eagerly() or callable(loss):
                return orig(self, loss, var_list, *args, **kwargs)
            with watcher.own_work():
                pairs = orig(self, loss, var_list, *args, **kwargs)
            caller = patching.caller(sys._getframe(1)).f_code.co_name
            api = "minimize" if caller == "minimize" else "compute_gradients"
            helper = tfcompat.get("gradients_util")._GradientsHelper
            helper = getattr(helper, "__wrapped__", helper)
            calls.guarded(calls.graph_gradients, helper, api, [loss], [v for _, v in pairs],
                          [g for g, _ in pairs], [], var_list is None)  # fmt: skip
            return pairs

        return patched

    patches.set("Optimizer.compute_gradients", make)


def _session_run(calls: Calls, patches: patching.Patches) -> None:
    def make(orig: Any) -> Any:
        def patched(self: Any, fetches: Any, *args: Any, **kwargs: Any) -> Any:
            return calls.sessions.run(orig, self, fetches, *args, **kwargs)

        return patched

    patches.set("BaseSession.run", make, everywhere=True)


def _function(calls: Calls, patches: patching.Patches) -> None:
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

    patches.set("Function.__call__", make, everywhere=True)


def _keras(calls: Calls, patches: patching.Patches) -> None:
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

    patches.set("keras.Model.fit", _training(calls, "fit"))
    patches.set("keras.Model.__call__", make_call)
    patches.set("keras.Model.predict", make_predict)
    patches.set("keras.Model.predict_on_batch", make_predict)
    _trainable(calls, patches)


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


def _trainable(calls: Calls, patches: patching.Patches) -> None:
    """``compile()``, Keras' train step and ``train_on_batch()``: the ``trainable`` flags at
    each, compared where they matter (``trainable.py``); ``fit()`` compares in ``_keras``."""

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

    patches.set("keras.Model.compile", make_compile)
    patches.set("keras.Model.train_on_batch", _training(calls, "train_on_batch"))
    patches.set("TensorFlowTrainer._make_function", make)


def _loss_scale(calls: Calls, patches: patching.Patches) -> None:
    """Keras' ``LossScaleOptimizer.scale_loss``: its result is a scaled loss; the gradients
    of it are reported divided by the scale (unscaled), with the scale shown."""

    def make(orig: Any) -> Any:
        def patched(self: Any, loss: Any) -> Any:
            scaled = orig(self, loss)
            calls.saw_scaled(scaled, self.dynamic_scale if self.built else self.initial_scale)
            return scaled

        return patched

    patches.set("LossScaleOptimizer.scale_loss", make)


def _trace_end(calls: Calls, patches: patching.Patches) -> None:
    """The end of a ``tf.function`` body: where the measuring ops are added."""

    def make(orig: Any) -> Any:
        def patched(self: Any, kind: Any, value: Any, tb: Any) -> Any:
            graph = getattr(self, "_graph", None)
            if kind is None and graph is not None:
                calls.end_of_trace(graph)
            elif graph is not None:
                calls.forget(graph)
            return orig(self, kind, value, tb)

        return patched

    patches.set("AutomaticControlDependencies.__exit__", make)


def _apply_gradients(calls: Calls, patches: patching.Patches) -> None:
    """Keras' ``apply_gradients``, where Keras warns "Gradients do not exist for variables"."""
    watcher = calls.watcher

    def make(orig: Any) -> Any:
        def patched(self: Any, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
            if watcher.busy or fit.active():
                return orig(self, grads_and_vars, *args, **kwargs)
            pairs = list(grads_and_vars)
            calls.guarded(calls.apply_gradients, pairs)
            return orig(self, pairs, *args, **kwargs)

        return patched

    patches.set("BaseOptimizer.apply_gradients", make)


def _replica_threads(calls: Calls, patches: patching.Patches) -> None:
    """``MirroredStrategy``'s replica threads start with the ``tf.function`` stack and the
    ``model.fit`` state of the thread running ``strategy.run``."""
    from gradscope._src.watcher.replicas import inherit

    inherit(calls.calling, patches)


def _constants(calls: Calls, patches: patching.Patches) -> None:
    """Eager constants (``tf.constant``, ``tf.convert_to_tensor`` of numpy) run no op the
    recorder sees: the line that made each is kept while eager ops are recorded, to name a
    watched one ``Const@FILE:LINE`` (``names.source_name``)."""
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

    patches.set("constant_op.convert_to_eager_tensor", make)


def _elsewhere(watcher: Watcher) -> None:
    """Note, once per thread, a program's gradient call in a thread it started (unwatched:
    ``process.py``); a forked child reports nothing."""
    if process.watched_here() or process.in_child() or watcher.busy_here():
        return
    note = process.unwatched_thread_note(sites.text(sites.fast_current()))
    with watcher.lock:
        if not any(n.endswith(note.split(": ", 1)[1]) for n in watcher.notes):
            watcher.notes.append(note)


def _numpy_function(calls: Calls, patches: patching.Patches) -> None:
    """``tf.numpy_function`` (and TensorFlow 1's ``py_func``) run eagerly: their inputs leave
    TensorFlow as numpy arrays (no gradient passes them back), at the user's line; no op
    the recorder sees says so. ``tf.py_function`` has a gradient and is left alone."""
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

    patches.set("script_ops.py_func_common", make)


def _from_api(caller: Any) -> bool:
    """Whether ``_GradientsHelper`` was called by ``tf.gradients`` (the program's call), not
    by TensorFlow itself (the backward function of a ``tf.function`` called under a tape)."""
    return bool(caller.f_code.co_filename.endswith("gradients_impl.py"))


def _listed(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]
