"""The watched JAX APIs, patched for the length of a run and restored after.

``jax.grad``, ``jax.value_and_grad`` and ``jax.vjp`` (the names a program and Keras' JAX
trainer call them by; ``jax.grad`` bound before the run reaches JAX's own ``value_and_grad``,
which is patched too), Keras' ``fit``/``train_on_batch`` (the ``fit()`` line is the site of
Keras' own step), the outermost Keras model call of a watched function (its outputs name an
output no loss reads), and Keras' functional operations (their lines, ``keras_ops``). A
program that imports JAX only later gets the patches when it does. Each patch calls JAX's or
Keras' own function with the program's arguments and returns its result unchanged.

All patches of this module are kept in one list (:class:`_Patches`) and undone in reverse.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gradscope._src.frontends import backend, keras_names
from gradscope._src.frontends.program import fit, jax_calls, sites
from gradscope._src.frontends.program.jax_calls import JaxCalls, _Request
from gradscope._src.frontends.program.watch import Watcher
from gradscope._src.frontends.python import keras_ops

#: Held while the APIs are patched: one watcher per process.
_ONE = threading.Lock()


class _Patches:
    """``setattr``s made, each undone in reverse, and only while it is still ours."""

    def __init__(self) -> None:
        self.done: list[tuple[Any, str, Any, Any, bool]] = []
        self.lock = threading.Lock()

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        with self.lock:
            own = name in vars(owner)
            original = vars(owner)[name] if own else getattr(owner, name)
            patched = make(original)
            try:
                patched.__wrapped__ = original
                for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
                    setattr(patched, attr, getattr(original, attr, None))
            except (AttributeError, TypeError):
                pass
            setattr(owner, name, patched)
            self.done.append((owner, name, original, patched, own))

    def undo(self) -> None:
        with self.lock:
            while self.done:
                owner, name, original, patched, own = self.done.pop()
                if vars(owner).get(name) is not patched:
                    continue  # the program replaced it since: leave theirs
                if own:
                    setattr(owner, name, original)
                else:
                    delattr(owner, name)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a callback once a module is imported (JAX or Keras imported by the program after
    the watch began), after the module's own code."""

    def __init__(self, names: dict[str, Callable[[], None]]) -> None:
        self.names = names
        self.busy: set[str] = set()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.names or fullname in self.busy:
            return None
        self.busy.add(fullname)  # another finder may ask the meta path again
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None and spec.loader is not None:
                    then = self.names.pop(fullname, None)
                    if then is not None:
                        spec.loader = _Loader(spec.loader, then)
                    return spec
        finally:
            self.busy.discard(fullname)
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        self.then()


@contextlib.contextmanager
def installed(watcher: Watcher) -> Iterator[JaxCalls]:
    """Patch the JAX and Keras APIs while the block runs (now, or when the program imports
    them). Calls are watched in this thread of this process only.

    Raises:
        AlreadyWatching: another watcher has the APIs patched.
    """
    from gradscope._src.errors import AlreadyWatching
    from gradscope._src.frontends.program import process

    if not _ONE.acquire(blocking=False):
        raise AlreadyWatching(
            "gradscope is already watching gradient calls in this process (a gradscope.watch() "
            "block, here or in another thread, or gradscope run): one watcher at a time"
        )
    calls = JaxCalls(watcher)
    patches = _Patches()
    later: dict[str, Callable[[], None]] = {}
    if "jax" in sys.modules:
        _jax(patches, calls)
    else:
        later["jax"] = lambda: _jax(patches, calls)
    if "keras" in sys.modules:
        _keras(patches, calls)
    else:
        later["keras"] = lambda: _keras(patches, calls)
    finder = _AfterImport(later)
    if later:
        sys.meta_path.insert(0, finder)
    try:
        with process.watching():
            yield calls
    finally:
        try:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)
            patches.undo()
        finally:
            if getattr(calls, "_keras_ops", False):
                keras_ops.uninstall()
            _ONE.release()


def _jax(patches: _Patches, calls: JaxCalls) -> None:
    import jax
    from jax._src import api

    def make_value_and_grad(returns_value: bool, api_name: str) -> Callable[[Any], Any]:
        def make(original: Any) -> Any:
            def patched(fun: Any, argnums: Any = 0, has_aux: bool = False,
                        *rest: Any, **options: Any) -> Any:  # fmt: skip
                own = original(fun, argnums, has_aux, *rest, **options)
                vg = own if returns_value else api_originals["value_and_grad"](
                    fun, argnums, has_aux, *rest, **options)  # fmt: skip
                keras_step = jax_calls.called_by_keras_step(sys._getframe(1))

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

    patches.replace(jax, "value_and_grad", make_value_and_grad(True, "jax.value_and_grad"))
    patches.replace(jax, "grad", make_value_and_grad(False, "jax.grad"))
    patches.replace(jax, "vjp", make_vjp)
    # ``jax.grad`` imported before the run calls api.value_and_grad by its module's name
    if vars(api).get("value_and_grad") is api_originals["value_and_grad"]:
        patches.replace(api, "value_and_grad", make_value_and_grad(True, "jax.value_and_grad"))


def _via_grad(frame: Any) -> bool:
    """Whether JAX's own ``grad`` called (``jax.grad`` bound before the run, reaching the
    patched ``value_and_grad`` inside JAX)."""
    return frame is not None and frame.f_code.co_name == "grad_f"


def _keras(patches: _Patches, calls: JaxCalls) -> None:
    try:
        import keras
        from keras.src.layers.layer import Layer
    except ImportError:  # pragma: no cover - no Keras: plain JAX
        return
    if backend.keras_backend() != "jax":
        return
    keras_ops.install()
    calls._keras_ops = True  # type: ignore[attr-defined]

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
            if isinstance(self, keras.Model):
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

    from keras.src.optimizers.base_optimizer import BaseOptimizer

    patches.replace(BaseOptimizer, "stateless_apply", make_apply)
    patches.replace(keras.Model, "compile", make_compile)
    patches.replace(keras.Model, "fit", training("fit"))
    patches.replace(keras.Model, "train_on_batch", training("train_on_batch"))
    patches.replace(keras.Model, "__call__", make_call)
    patches.replace(Layer, "stateless_call", make_stateless)
