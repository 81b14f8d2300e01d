"""Saved models as targets: a ``.keras`` or ``.h5`` file, a SavedModel directory, or a Keras
model object, inspected for a loss the user names (``--loss compiled``, ``--loss mse``,
``--loss OUTPUT=NAME``) on their data or random data.

``SavedTarget`` is what the pipeline is handed; ``frontend.SavedFrontend`` loads it (after
``sniff`` has checked the file without TensorFlow) and writes its losses as a
``gradscope.Target``, which the Python front-end traces like any other. Importing this
package stays light: no TensorFlow, no numpy.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.frontends.saved.options import LoadOptions
from gradscope._src.frontends.saved.sniff import looks_saved

__all__ = ["LoadOptions", "SavedTarget", "is_keras_model", "is_saved_target"]


@dataclass(frozen=True)
class SavedTarget:
    """A saved model (a path, or a Keras model object) and how to load and run it."""

    source: Any
    options: LoadOptions = field(default_factory=LoadOptions)

    @property
    def label(self) -> str:
        if isinstance(self.source, (str, os.PathLike)):
            return os.fspath(self.source)
        return str(getattr(self.source, "name", None) or type(self.source).__name__)

    @property
    def path(self) -> str:  # how ``check`` names a target in its progress line
        return self.label


def is_keras_model(obj: Any) -> bool:
    """Whether ``obj`` is a Keras model (only when Keras is already imported: checking never
    imports it)."""
    keras = sys.modules.get("keras")
    model = getattr(keras, "Model", None)
    return isinstance(model, type) and isinstance(obj, model)


def is_saved_target(obj: Any) -> bool:
    """Whether ``obj`` is a saved model: a ``SavedTarget``, a Keras model object, or a path
    naming a ``.keras``/``.h5`` file, a directory, or a file whose bytes are a zip's or an
    HDF5 file's."""
    if isinstance(obj, SavedTarget) or is_keras_model(obj):
        return True
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    return isinstance(obj, str) and looks_saved(obj)
