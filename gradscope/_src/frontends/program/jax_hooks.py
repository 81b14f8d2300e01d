"""The watched JAX APIs, patched while a watch lasts and restored after.

``jax.grad``, ``jax.value_and_grad`` and ``jax.vjp`` (the names a program and Keras' JAX
trainer call them by; ``jax.grad`` bound before the watch reaches JAX's own ``value_and_grad``,
which is patched too), Keras' ``fit``/``train_on_batch`` (the ``fit()`` line is the site of
Keras' own step), the outermost Keras model call of a watched function (its outputs name an
output no loss reads), the optimizer's ``stateless_apply`` and optax's ``apply_updates`` (what
they move without a gradient), and Keras' functional operations (their lines, ``keras_ops``).
Each patch calls JAX's or Keras' own function with the program's arguments and returns its
result unchanged.

Every attribute is set through the registry (``patching.py``, where each is declared), in the
watch's own installation (``hooks.enter``: beside TensorFlow's, one watch per process), and
JAX's and Keras' are set once the program has imported them: gradscope never imports either.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gradscope._src import patching
from gradscope._src.frontends import backend, keras_names
from gradscope._src.frontends.program import fit, jax_calls, sites
from gradscope._src.frontends.program.jax_calls import JaxCalls, _Request
from gradscope._src.frontends.program.watch import Watcher
from gradscope._src.frontends.python import keras_ops

#: Held while the Monitor's own installation (:func:`installed`) lasts: one at a time.
_ONE = threading.Lock()


def install(watcher: Watcher, patches: patching.Patches, traces: Any,
            installed: list[str]) -> JaxCalls:  # fmt: skip
    """Set JAX's watched APIs in ``patches`` (now, or once the program imports JAX), and
    Keras' when it runs on JAX (once imported); each group set is added to ``installed``
    (``jax``, ``keras-jax``). Returns the calls' handler.

    Args:
        watcher: the watch's watcher.
        patches: the watch's installation (its ``when`` says which threads are watched).
        traces: the Keras train steps' trainable flags (``trainable.Traces``), shared with
            TensorFlow's hooks.
        installed: the watch's groups set so far.
    """
    calls = JaxCalls(watcher, traces)

    def jax_now() -> None:
        if "jax" not in installed:
            installed.append("jax")
            _jax(patches, calls)

    def keras_now() -> None:
        if "keras-jax" not in installed and backend.keras_backend() == "jax":
            installed.append("keras-jax")
            _keras(patches, calls)

    def optax_now() -> None:
        if "optax" not in installed:
            installed.append("optax")
            _optax(patches, calls)

    patches.wait_for(("jax",), jax_now)
    patches.wait_for(("keras",), keras_now)
    patches.wait_for(("optax",), optax_now)
    return calls


@contextlib.contextmanager
def installed(watcher: Watcher) -> Iterator[JaxCalls]:
    """JAX's and Keras' APIs patched for ``watcher`` alone while the block runs (the
    ``Monitor``'s recording of a fit on JAX), in this thread.

    Raises:
        AlreadyWatching: another Monitor's fit has them (a watch, ``gradscope run`` or
            ``watch()``, is the caller's to ask first: ``hooks.watching``).
    """
    from gradscope._src.errors import AlreadyWatching
    from gradscope._src.frontends.program import process

    if not _ONE.acquire(blocking=False):
        raise AlreadyWatching(
            "gradscope is already watching gradient calls in this process (a gradscope.watch() "
            "block, here or in another thread, or gradscope run): one watcher at a time"
        )
    from gradscope._src.frontends.program import trainable

    try:
        patches = patching.Patches(when=process.watched_here)
        calls = install(watcher, patches, trainable.Traces(watcher), [])
        try:
            with process.watching():
                yield calls
        finally:
            patches.undo()
    finally:
        _ONE.release()


def _jax(patches: patching.Patches, calls: JaxCalls) -> None:
    from gradscope._src import tfcompat

    api = tfcompat.get("jax_api")

    def make_value_and_grad(returns_value: bool, api_name: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def patched(fun: Any, argnums: Any = 0, has_aux: bool = False,
                        *rest: Any, **options: Any) -> Any:  # fmt: skip
                own = original(fun, argnums, has_aux, *rest, **options)
                vg = own if returns_value else api_originals["value_and_grad"](
                    fun, argnums, has_aux, *rest, **options)  # fmt: skip
                keras_step = jax_calls.called_by_keras_step(patching.caller(sys._getframe(1)))

                def call(*args: Any, **kwargs: Any) -> Any:
                    if calls.watcher.busy or jax_calls._inside_own():
                        return own(*args, **kwargs)
                    name = api_name
                    if not returns_value and _via_grad(sys._getframe(1)):
                        name = "jax.grad"
                    request = _Request(
                        name,
                        fun,
                        argnums,
                        has_aux,
                        args,
                        kwargs,
                        keras_step,
                        api_originals["value_and_grad"],
                        rest,
                        options,
                    )
                    return calls.grad(vg, request, returns_value)

                try:
                    call.__wrapped__ = own  # type: ignore[attr-defined]
                    call.__doc__ = getattr(own, "__doc__", None)
                except AttributeError:
                    pass
                return call

            return patched

        return make

    api_originals = {"value_and_grad": api.value_and_grad, "vjp": api.vjp}

    def make_vjp(original: Any) -> Any:
        def patched(fun: Any, *primals: Any, has_aux: bool = False, **options: Any) -> Any:
            return calls.vjp(original, fun, primals, has_aux, options)

        return patched

    jax = sys.modules["jax"]  # imported by the program: this runs once it has
    own = jax.value_and_grad is api_originals["value_and_grad"]
    patches.set("jax.value_and_grad", make_value_and_grad(True, "jax.value_and_grad"))
    patches.set("jax.grad", make_value_and_grad(False, "jax.grad"))
    patches.set("jax.vjp", make_vjp)
    # ``jax.grad`` imported before the watch calls api.value_and_grad by its module's name
    if own and vars(api).get("value_and_grad") is api_originals["value_and_grad"]:
        patches.set("jax_api.value_and_grad", make_value_and_grad(True, "jax.value_and_grad"))


def _optax(patches: patching.Patches, calls: JaxCalls) -> None:
    """``optax.apply_updates(params, updates)``, what a plain JAX or Flax program (and Flax
    NNX's ``Optimizer.update``) steps its parameters with: the updates of parameters no
    gradient reached are compared with zero (weight decay, momentum move them anyway)."""

    def make(original: Any) -> Any:
        def patched(params: Any, updates: Any) -> Any:
            result = original(params, updates)
            if not calls.watcher.busy:
                with contextlib.suppress(Exception):  # never a failure of the step
                    calls.updated(updates, sites.text(sites.current()))
            return result

        return patched

    patches.set("optax.apply_updates", make)


def _via_grad(frame: Any) -> bool:
    """Whether JAX's own ``grad`` called (``jax.grad`` bound before the run, reaching the
    patched ``value_and_grad`` inside JAX)."""
    return frame is not None and frame.f_code.co_name == "grad_f"


def _keras(patches: patching.Patches, calls: JaxCalls) -> None:
    from gradscope._src import tfcompat

    try:
        model_class = tfcompat.get("keras.Model")
    except ImportError:  # pragma: no cover - no Keras: plain JAX
        return
    keras_ops.install()
    patches.on_undo(keras_ops.uninstall)

    def training(api: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
                fit.enter(self, api, sites.text(sites.fast_current()))
                keras_names.saw(self)
                try:
                    return original(self, *args, **kwargs)
                finally:
                    fit.leave()

            return patched

        return make

    def make_stateless(original: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            if isinstance(self, model_class):
                jax_calls.model_called(self, result[0])
            return result

        return patched

    def make_call(original: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            with fit.model_call() as outermost:
                outputs = original(self, *args, **kwargs)
            if outermost:
                jax_calls.model_called(self, outputs)
                keras_names.saw(self)
            return outputs

        return patched

    def make_compile(original: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(self, *args, **kwargs)
            calls.traces.compile(self)
            return result

        return patched

    def make_apply(original: Any) -> Any:
        def patched(self: Any, optimizer_variables: Any, grads: Any,
                    trainable_variables: Any) -> Any:  # fmt: skip
            result = original(self, optimizer_variables, grads, trainable_variables)
            if not calls.watcher.busy:
                with contextlib.suppress(Exception):  # never a failure of the step
                    calls.applied(self, list(trainable_variables), list(result[0]))
            return result

        return patched

    patches.set("BaseOptimizer.stateless_apply", make_apply)
    patches.set("keras.Model.compile", make_compile)
    patches.set("keras.Model.fit", training("fit"))
    patches.set("keras.Model.train_on_batch", training("train_on_batch"))
    patches.set("keras.Model.__call__", make_call)
    patches.set("keras.layers.Layer.stateless_call", make_stateless)
