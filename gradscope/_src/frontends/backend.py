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
JAX program any more). The gradient APIs refused are patched through the registry
(``patching.py``), as every attribute gradscope patches.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

from gradscope._src import patching
from gradscope._src.errors import UsageError

#: The frameworks gradscope does not watch, by the top-level module that brings them, as
#: users know them.
FRAMEWORKS = {"jax": "JAX", "torch": "PyTorch"}
#: Keras 3's backends and the framework each computes gradients with.
KERAS_BACKENDS = {"jax": "JAX", "torch": "PyTorch", "numpy": "NumPy", "openvino": "OpenVINO"}
#: The frameworks every door refuses (gradscope watches TensorFlow only): the one switch.
REFUSED = frozenset({"JAX", "PyTorch", "NumPy", "OpenVINO"})
#: The gradient APIs that refuse while a door watches, per module: ``(owner path, name)``;
#: declared, as every attribute gradscope patches, in ``patching.ATTRIBUTES``.
GRAD_APIS: dict[str, tuple[tuple[str, str], ...]] = {
    module: tuple((a.owner, a.name) for a in patching.ATTRIBUTES.values() if a.module == module)
    for module in FRAMEWORKS
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


@contextlib.contextmanager
def refusing(what: str = "the program", door: str = "") -> Iterator[None]:
    """While inside, the gradient APIs of JAX and PyTorch (:data:`GRAD_APIS`) raise
    :class:`Refused`, those imported already and those imported later, and so does the
    program's own import of Keras 3 on another backend than TensorFlow; every attribute is
    put back at the end, unless something else replaced it meanwhile (never undo what the
    program did). The attributes are set through the patch registry (``patching.py``, where
    they are declared), in every thread.

    A Keras imported before the door opened (an earlier notebook cell) is not read: that is
    the environment, not the code watched; a fit on its JAX backend is refused at its first
    ``jax.value_and_grad``.
    """
    patches = patching.Patches()  # every thread: a JAX gradient from a worker thread too

    def refuse_keras() -> None:  # the program's own import of Keras: which backend
        refused = refusal(what, door)
        if refused is not None:
            raise Refused(refused)

    def patch(module_name: str) -> None:
        framework = FRAMEWORKS[module_name]
        for owner_path, name in GRAD_APIS[module_name]:
            refuser = functools.partial(_refuser, framework=framework, what=what, door=door,
                                        api=_api_name(owner_path, name))  # fmt: skip
            with contextlib.suppress(AttributeError, TypeError):  # absent, or a C slot
                patches.set(f"{owner_path}.{name}", refuser)

    for module_name in GRAD_APIS:
        if FRAMEWORKS[module_name] in REFUSED:
            patches.wait_for((module_name,), functools.partial(patch, module_name))
    if "keras" not in sys.modules:
        patches.wait_for(("keras",), refuse_keras)
    try:
        yield
    finally:
        patches.undo()


def _refuser(original: Callable[..., Any], framework: str, api: str, what: str,
             door: str) -> Callable[..., Any]:  # fmt: skip
    """What a gradient API of JAX or PyTorch is while a door watches (the registry's switch
    around it looks like ``original``)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise Refused(NotTensorFlow(framework, _how(framework, api), what, door))

    return refuse
