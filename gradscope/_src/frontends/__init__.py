"""Front-ends: each way into gradscope turns its input into what the pipeline runs.

``yaml`` reads a spec (no TensorFlow until it is built), ``python`` a Python target, ``saved``
a saved model (a ``.keras``, ``.h5`` or SavedModel directory): each is a
``base.Frontend`` that the pipeline runs, and ``open_frontend`` picks one for whatever a
command was given. ``program`` runs a user's own training script (``gradscope run``) and
watches the gradients it computes, at the user's own lines.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradscope._src.frontends.yaml.model import DEFAULT_MAX_ELEMENTS, Spec

if TYPE_CHECKING:
    from gradscope._src.frontends.base import Frontend


def load(target: str | Spec, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Spec:
    """A spec from a path (or the spec itself); raises ``SpecErrors`` with every problem."""
    if isinstance(target, Spec):
        return target
    from gradscope._src.frontends.yaml import load_spec

    return load_spec(str(target), max_elements=max_elements)


def open_frontend(target: Any, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Frontend:
    """The front-end for a spec path, a ``Spec``, a saved model (a ``.keras``/``.h5`` file, a
    SavedModel directory, a Keras model, a ``SavedTarget``), or a Python target (a
    ``module:function`` or ``file.py:function`` string, a ``Target``, a mapping or a
    callable). A spec is read and validated here, before TensorFlow is imported."""
    from gradscope._src.frontends.python import is_python_target
    from gradscope._src.frontends.saved import SavedTarget, is_saved_target

    if is_saved_target(target):
        from gradscope._src.frontends.saved.frontend import SavedFrontend

        saved = target if isinstance(target, SavedTarget) else SavedTarget(target)
        return SavedFrontend(saved)
    if is_python_target(target):
        from gradscope._src.frontends.backend import keras_on_jax

        if keras_on_jax():  # the target's losses run on JAX (no TensorFlow imported)
            from gradscope._src.frontends.python.jax_frontend import JaxPythonFrontend

            return JaxPythonFrontend(target)
        from gradscope._src.frontends.python.frontend import PythonFrontend

        return PythonFrontend(target)
    from gradscope._src.frontends.yaml.frontend import SpecFrontend

    return SpecFrontend(load(target, max_elements=max_elements))
