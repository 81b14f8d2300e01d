"""Which framework computes a program's gradients: gradscope watches TensorFlow only.

The one place that decides it, for every door (``gradscope run``, ``gradscope.watch()``, the
Keras ``Monitor``, ``pytest --gradscope``, the notebook magic, Python targets of ``inspect``,
``check``, ``diff`` and ``graph``). A program that trains with JAX or PyTorch (Keras 3 on its
``jax`` or ``torch`` backend, or ``jax.grad`` and ``loss.backward()`` called directly) made no
TensorFlow gradient call, and "no gradient call was made · 0 problems", exit 0, was the
verdict on a program whose gradients were cut. Each door now refuses it at once, in one
line, exit code 2 (:class:`NotTensorFlow`; a program that cannot be watched, as one that
cannot be started).

What is read is what actually ran, never the environment alone:

- the backend of the Keras the program imported (``keras.backend.backend()``:
  ``KERAS_BACKEND``, or ``os.environ["KERAS_BACKEND"]`` set by the program before its import,
  or ``~/.keras/keras.json``), read when the program's own ``import keras`` has run, and when
  a ``Monitor`` is made or a fit starts (:func:`keras_backend`);
- a gradient API of JAX or PyTorch called while a door watches (:func:`refusing`: the
  APIs of :data:`GRAD_APIS` raise :class:`Refused` into the program, a ``BaseException``
  that its ``except Exception`` does not swallow, and the door says :class:`NotTensorFlow`);
- what a Python target hands over: a JAX array or a PyTorch tensor as a loss or a variable
  (:func:`framework_of`).

When JAX support lands (its own modules), this module is where the refusal for JAX is
lifted: every check asks :data:`REFUSED` (take ``"JAX"`` out of it, and no door refuses a
JAX program any more).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from gradscope._src.errors import UsageError

#: The frameworks gradscope does not watch, by the top-level module that brings them, as
#: users know them.
FRAMEWORKS = {"jax": "JAX", "torch": "PyTorch"}
#: Keras 3's backends and the framework each computes gradients with.
KERAS_BACKENDS = {"jax": "JAX", "torch": "PyTorch", "numpy": "NumPy", "openvino": "OpenVINO"}
#: The frameworks every door refuses (gradscope watches TensorFlow only): the one switch.
REFUSED = frozenset({"JAX", "PyTorch", "NumPy", "OpenVINO"})
#: The gradient APIs that refuse while a door watches, per module: ``(owner path, name)``.
_JAX_APIS = ("grad", "value_and_grad", "vjp", "jvp", "jacfwd", "jacrev", "hessian", "linearize")
GRAD_APIS: dict[str, tuple[tuple[str, str], ...]] = {
    "jax": tuple(("jax", name) for name in _JAX_APIS),
    "torch": (
        ("torch.autograd", "grad"),
        ("torch.autograd", "backward"),
        ("torch.Tensor", "backward"),
    ),
}


class NotTensorFlow(UsageError):
    """A program or target that computes its gradients with another framework than
    TensorFlow: refused, exit code 2. ``str()`` is the one line each door prints."""

    def __init__(self, framework: str, how: str, what: str = "the program",
                 door: str = "") -> None:  # fmt: skip
        self.framework, self.how = framework, how
        super().__init__(
            f"{door + ': ' if door else ''}{what} computes its gradients with {framework} "
            f"({how}), and gradscope watches TensorFlow only: nothing was checked"
        )


class Refused(BaseException):
    """Raised into the program by a JAX or PyTorch gradient API while a door watches; the
    door turns it into :class:`NotTensorFlow`. A ``BaseException``, as ``SystemExit`` is:
    the program's ``except Exception`` lets it through."""

    def __init__(self, error: NotTensorFlow) -> None:
        super().__init__(str(error))
        self.error = error


def keras_backend() -> str | None:
    """The backend of the Keras the program imported (``tensorflow``, ``jax``, ...), None
    when no Keras 3 is imported (Keras is never imported here)."""
    keras = sys.modules.get("keras")
    backend = getattr(getattr(keras, "backend", None), "backend", None)
    if not callable(backend):
        return None
    try:
        return str(backend())
    except Exception:  # a Keras half imported: nothing to tell yet
        return None


def refusal(what: str = "the program", door: str = "") -> NotTensorFlow | None:
    """The refusal the Keras the program imported calls for: Keras 3 on a backend other than
    TensorFlow; None when it runs on TensorFlow (or no Keras is imported)."""
    backend = keras_backend()
    if backend is None or backend == "tensorflow":
        return None
    framework = KERAS_BACKENDS.get(backend, backend)
    if framework not in REFUSED and backend in KERAS_BACKENDS:
        return None
    return NotTensorFlow(framework, f"Keras 3 on its {backend!r} backend", what, door)


def check_keras(what: str = "the program", door: str = "") -> None:
    """Raise :func:`refusal` when there is one.

    Raises:
        NotTensorFlow: Keras runs on another backend than TensorFlow.
    """
    refused = refusal(what, door)
    if refused is not None:
        raise refused


def check_values(values: Any, what: str, role: str) -> None:
    """Refuse values (a target's variables, a loss's result) that belong to another
    framework (:func:`framework_of`).

    Args:
        values: what the target handed over.
        what: who computes the gradients (``the target t.py:build``).
        role: what the values are, before a verb (``its loss 'main' returns``).

    Raises:
        NotTensorFlow: one does.
    """
    for value in values:
        framework = framework_of(value)
        if framework is not None and framework in REFUSED:
            kind = f"{type(value).__module__}.{type(value).__qualname__}"
            keras = kind.startswith("keras.") and keras_backend()
            how = f"Keras 3 on its {keras!r} backend" if keras else f"{role} a {kind}"
            raise NotTensorFlow(framework, how, what)


@contextlib.contextmanager
def refused(what: str, door: str = "") -> Iterator[None]:
    """:func:`refusing`, its :class:`Refused` raised as the :class:`NotTensorFlow` it
    carries (a Python target's code: gradscope's own call, not a program's run)."""
    try:
        with refusing(what, door):
            yield
    except Refused as exc:
        raise exc.error from None


def framework_of(value: Any) -> str | None:
    """``JAX`` for a JAX array or tracer, ``PyTorch`` for a torch tensor or parameter, a
    Keras 3 variable's backend's framework; None for anything else (a ``tf.Tensor``)."""
    module = type(value).__module__.partition(".")[0]
    if module in _VALUE_MODULES:
        return _VALUE_MODULES[module]
    if module == "keras" and hasattr(value, "value"):  # a Keras variable: what it holds
        inner = type(getattr(value, "_value", None)).__module__.partition(".")[0]
        return _VALUE_MODULES.get(inner)
    return None


#: The top-level modules whose arrays belong to each framework (a JAX array's type lives in
#: ``jaxlib``).
_VALUE_MODULES = {"jax": "JAX", "jaxlib": "JAX", "torch": "PyTorch"}


def _api_name(owner: str, name: str) -> str:
    return f"{owner}.{name}" if owner != "torch.Tensor" else f"Tensor.{name}"


def _how(framework: str, api: str) -> str:
    """How the program reached the API: Keras 3 on that backend, or directly."""
    backend = keras_backend()
    if backend is not None and KERAS_BACKENDS.get(backend) == framework:
        return f"{api}, called by Keras 3 on its {backend!r} backend"
    return f"{api} called"


_LOCK = threading.Lock()


@contextlib.contextmanager
def refusing(what: str = "the program", door: str = "") -> Iterator[None]:
    """While inside, the gradient APIs of JAX and PyTorch (:data:`GRAD_APIS`) raise
    :class:`Refused`, those imported already and those imported later (a finder sees the
    import), and so does the program's own import of Keras 3 on another backend than
    TensorFlow; every attribute is put back at the end, unless something else replaced it
    meanwhile (never undo what the program did).

    A Keras imported before (by gradscope itself, to import TensorFlow quietly, with the
    environment's ``KERAS_BACKEND``) is not read: that is the environment, not the program;
    a fit on its JAX backend is refused at its first ``jax.value_and_grad``.
    """
    patched: list[tuple[Any, str, Any, Any]] = []  # (owner, name, original, wrapper)

    def patch(module_name: str) -> None:
        if module_name == "keras":  # the program's own import of Keras: which backend
            refused = refusal(what, door)
            if refused is not None:
                raise Refused(refused)
            return
        if FRAMEWORKS[module_name] not in REFUSED:
            return
        for owner_path, name in GRAD_APIS[module_name]:
            owner = _resolve(owner_path)
            original = getattr(owner, name, None) if owner is not None else None
            if original is None or getattr(original, "__gradscope_refuses__", False):
                continue
            api = _api_name(owner_path, name)
            wrapper = _refuser(original, FRAMEWORKS[module_name], api, what, door)
            with contextlib.suppress(AttributeError, TypeError):  # a C type's slot: left be
                setattr(owner, name, wrapper)
                patched.append((owner, name, original, wrapper))

    finder = _OnImport(patch)
    with _LOCK:
        for module_name in GRAD_APIS:
            if module_name in sys.modules and FRAMEWORKS[module_name] in REFUSED:
                patch(module_name)
        sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        with _LOCK:
            if finder in sys.meta_path:
                sys.meta_path.remove(finder)
            for owner, name, original, wrapper in reversed(patched):
                if getattr(owner, name, None) is wrapper:
                    setattr(owner, name, original)


def _resolve(path: str) -> Any:
    """``torch.autograd`` -> the module (or class) at that dotted path, when imported."""
    head, *rest = path.split(".")
    found: Any = sys.modules.get(head)
    for part in rest:
        found = getattr(found, part, None)
    return found


def _refuser(original: Callable[..., Any], framework: str, api: str, what: str,
             door: str) -> Callable[..., Any]:  # fmt: skip
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise Refused(NotTensorFlow(framework, _how(framework, api), what, door))

    refuse.__gradscope_refuses__ = True  # type: ignore[attr-defined]
    refuse.__wrapped__ = original  # type: ignore[attr-defined]
    refuse.__name__ = getattr(original, "__name__", "refuse")
    refuse.__doc__ = getattr(original, "__doc__", None)
    return refuse


class _OnImport(importlib.abc.MetaPathFinder):
    """Calls ``then(name)`` once a module of :data:`GRAD_APIS` (``jax``, ``torch``) or
    ``keras`` has been imported, before the importer's next line runs (so its ``from jax
    import grad`` gets what ``then`` put there)."""

    def __init__(self, then: Callable[[str], None]) -> None:
        self.then = then
        self.busy: set[str] = set()

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if (name not in GRAD_APIS and name != "keras") or name in self.busy:
            return None
        self.busy.add(name)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Then(spec.loader, lambda: self.then(name))
        return spec


class _Then(importlib.abc.Loader):
    """A module's own loader, then ``then()`` once the module has run; the module gets its
    own loader back before it runs."""

    def __init__(self, loader: Any, then: Callable[[], None]) -> None:
        self.loader, self.then = loader, then

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        with _LOCK:
            self.then()
