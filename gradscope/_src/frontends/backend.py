"""Which framework computes a program's gradients, for every door: the one place.

gradscope watches TensorFlow and JAX (Keras 3 on its ``jax`` backend, and plain JAX:
``jax.grad``, ``value_and_grad``, ``vjp``). Every door (``gradscope run``, ``gradscope.watch()``,
the Keras ``Monitor``, ``pytest --gradscope``, the notebook magic, Python targets of
``inspect``, ``check``, ``diff`` and ``graph``) asks this module two questions:

- whether a Python target's losses run on JAX (:func:`keras_on_jax`: Keras configured on
  its ``jax`` backend), read without importing Keras, JAX or TensorFlow (a program's door
  imports neither: each framework is watched from the program's own import of it);
- whether the program computes its gradients with a framework gradscope does not watch
  (:data:`REFUSED`: PyTorch, and Keras 3 on its ``numpy`` or ``openvino`` backend). Such a
  program made no gradient call gradscope can read, and "no gradient call was made · 0
  problems", exit 0, would be the verdict on a program whose gradients were cut; each door
  refuses it at once, in one line, exit code 2 (:class:`NotTensorFlow`).

What is read is what actually ran, never the environment alone:

- the backend of the Keras the program imported (``keras.backend.backend()``:
  ``KERAS_BACKEND``, or ``os.environ["KERAS_BACKEND"]`` set by the program before its import,
  or ``~/.keras/keras.json``), read when the program's own ``import keras`` has run, and when
  a ``Monitor`` is made or a fit starts (:func:`keras_backend`);
- a gradient API of a refused framework called while a door watches (:func:`refusing`: the
  APIs of :data:`GRAD_APIS` raise :class:`Refused` into the program, a ``BaseException``
  that its ``except Exception`` does not swallow, and the door says :class:`NotTensorFlow`);
- what a Python target hands over: a PyTorch tensor as a loss or a variable
  (:func:`framework_of`).

The environment (``KERAS_BACKEND``) alone decides nothing for a program: one that never
imports Keras is not refused under ``KERAS_BACKEND=torch``. The gradient APIs refused are
patched through the registry (``patching.py``), as every attribute gradscope patches.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

from gradscope._src import patching
from gradscope._src.errors import UsageError

#: The frameworks whose gradient APIs a door patches, by the top-level module that brings
#: them, as users know them (JAX's are watched: ``watcher/jax_hooks.py``).
FRAMEWORKS = {"jax": "JAX", "torch": "PyTorch"}
#: Keras 3's backends and the framework each computes gradients with.
KERAS_BACKENDS = {"jax": "JAX", "torch": "PyTorch", "numpy": "NumPy", "openvino": "OpenVINO"}
#: The frameworks gradscope watches, as its refusals name them.
WATCHED = ("TensorFlow", "JAX")
#: The frameworks every door refuses: the one switch (JAX was taken out when gradscope
#: learned to read its jaxprs; PyTorch's autograd is not read: docs/guides/keras-jax.md).
REFUSED = frozenset({"PyTorch", "NumPy", "OpenVINO"})
#: The gradient APIs that refuse while a door watches, per refused framework's module:
#: ``(owner path, name)``; declared, as every attribute gradscope patches, in
#: ``patching.ATTRIBUTES``.
GRAD_APIS: dict[str, tuple[tuple[str, str], ...]] = {
    module: tuple((a.owner, a.name) for a in patching.ATTRIBUTES.values() if a.module == module)
    for module, framework in FRAMEWORKS.items()
    if framework in REFUSED
}


class NotTensorFlow(UsageError):
    """A program or target that computes its gradients with a framework gradscope does not
    watch (:data:`REFUSED`): refused, exit code 2. ``str()`` is the one line each door
    prints; Keras 3 on such a backend is told the backends that are watched."""

    def __init__(self, framework: str, how: str, what: str = "the program",
                 door: str = "") -> None:  # fmt: skip
        self.framework, self.how = framework, how
        fix = ("; KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax runs it where gradscope "
               "watches" if how.startswith("Keras 3") else "")  # fmt: skip
        super().__init__(
            f"{door + ': ' if door else ''}{what} computes its gradients with {framework} "
            f"({how}), and gradscope watches {' and '.join(WATCHED)} only: nothing was "
            f"checked{fix}"
        )


class Refused(BaseException):
    """Raised into the program by a refused framework's gradient API (PyTorch's) while a
    door watches; the door turns it into :class:`NotTensorFlow`. A ``BaseException``, as
    ``SystemExit`` is: the program's ``except Exception`` lets it through."""

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


def configured_keras_backend(text: str | None = None) -> str:
    """Keras' backend as Keras will read it, without importing Keras: the imported Keras',
    else the one a program's ``text`` sets (``os.environ["KERAS_BACKEND"] = "jax"`` before
    its import), else ``KERAS_BACKEND``, else ``~/.keras/keras.json``'s, else ``tensorflow``
    (Keras' default)."""
    import json
    import os

    imported = keras_backend()
    if imported is not None:
        return imported
    said = _SETS_BACKEND.search(text) if text is not None else None
    backend = said.group(1) if said else os.environ.get("KERAS_BACKEND")
    if backend is None:
        home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        with (contextlib.suppress(OSError, ValueError, AttributeError),
              open(os.path.join(home, "keras.json"), encoding="utf-8") as f):  # fmt: skip
            backend = json.load(f).get("backend")
    return str(backend or "tensorflow")


def check_program(script: str | None = None, module: str | None = None,
                  what: str = "the program") -> None:  # fmt: skip
    """Refuse, before it starts, a program whose text imports Keras configured on a refused
    backend (``KERAS_BACKEND=torch``): nothing of it runs. (Its import of Keras is refused
    too, should this reading miss it: :func:`refusing`.)

    Raises:
        NotTensorFlow: it would run Keras 3 on PyTorch (or NumPy, OpenVINO).
    """
    text = _program_text(script, module)
    if text is None or not _KERAS.search(text):
        return
    configured = configured_keras_backend(text)
    framework = KERAS_BACKENDS.get(configured)
    if framework in REFUSED:
        raise NotTensorFlow(str(framework), f"Keras 3 on its {configured!r} backend", what)


def keras_on_jax() -> bool:
    """Whether a Python target's Keras runs on JAX (its losses then run on JAX, and
    TensorFlow is not imported): the imported Keras', else as configured."""
    return configured_keras_backend() == "jax"


_KERAS = re.compile(r"^\s*(?:import|from)\s+keras\b", re.MULTILINE)
_SETS_BACKEND = re.compile(r"""KERAS_BACKEND["']\s*\]?\s*(?:=|,)\s*["'](\w+)["']""")


def _program_text(script: str | None, module: str | None) -> str | None:
    """The program's own text: the script's, or the module's file's (never run)."""
    return _text(script if script is not None else _module_file(module or ""))


def _text(path: str | None) -> str | None:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return None


def _module_file(name: str) -> str | None:
    """The file of module ``name`` (``-m pkg.train``), found without running any of it."""
    from importlib.machinery import PathFinder

    path: list[str] | None = None
    spec = None
    for part in name.split("."):
        spec = PathFinder.find_spec(part, path)
        if spec is None:
            return None
        path = list(spec.submodule_search_locations or [])
    if spec is not None and spec.submodule_search_locations:  # a package: its __main__
        main = PathFinder.find_spec("__main__", list(spec.submodule_search_locations))
        return main.origin if main is not None else None
    return spec.origin if spec is not None else None


def check_values(values: Any, what: str, role: str) -> None:
    """Refuse values (a target's variables, a loss's result) that the TensorFlow front-end
    of a Python target cannot differentiate (:func:`framework_of`): a refused framework's,
    or JAX's when Keras runs on TensorFlow (a target's JAX gradients are read through Keras 3
    on its ``jax`` backend: ``frontends/python/jax_frontend.py``).

    Args:
        values: what the target handed over.
        what: who computes the gradients (``the target t.py:build``).
        role: what the values are, before a verb (``its loss 'main' returns``).

    Raises:
        NotTensorFlow: one belongs to a refused framework.
        UsageError: one is JAX's while Keras runs on TensorFlow.
    """
    for value in values:
        framework = framework_of(value)
        if framework is None:
            continue
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        keras = kind.startswith("keras.") and keras_backend()
        if framework in REFUSED:
            how = f"Keras 3 on its {keras!r} backend" if keras else f"{role} a {kind}"
            raise NotTensorFlow(framework, how, what)
        if framework == "JAX":
            raise UsageError(
                f"{what}: {role} a {kind} (JAX) while Keras runs on "
                f"{keras_backend() or 'tensorflow'}: gradscope reads a Python target's JAX "
                "gradients through Keras 3 on its 'jax' backend (KERAS_BACKEND=jax, the "
                "variables Keras variables), and a plain JAX program's through gradscope run"
            )


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
    """While inside, the gradient APIs of the refused frameworks (:data:`GRAD_APIS`:
    PyTorch's) raise :class:`Refused`, those imported already and those imported later, and
    so does the program's own import of Keras 3 on a refused backend; every attribute is
    put back at the end, unless something else replaced it meanwhile (never undo what the
    program did). The attributes are set through the patch registry (``patching.py``, where
    they are declared), in every thread.

    A Keras imported before the door opened (an earlier notebook cell) is not read: that is
    the environment, not the code watched.
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
