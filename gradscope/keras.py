"""Keras helpers: ``targets(model, x, y)`` for compiled multi-output models; ``Monitor`` and
its finding ``Thresholds``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from gradscope._src.frontends.python import keras_ops
from gradscope._src.frontends.python.keras import targets
from gradscope._src.timeline.findings import Thresholds

if TYPE_CHECKING:
    from gradscope._src.timeline.monitor import Monitor

__all__ = ["Monitor", "Thresholds", "targets"]

if "keras" in sys.modules:  # a model built from here on is one the Monitor may watch: note
    keras_ops.for_good()  # where its Keras operations are written (cheap; nothing computed)


def __getattr__(name: str) -> Any:
    # Monitor subclasses keras.callbacks.Callback: Keras (and TensorFlow) are imported when
    # it is first used, so that `import gradscope.keras` stays light.
    if name == "Monitor":
        from gradscope._src.timeline.monitor import Monitor

        keras_ops.for_good()
        globals()["Monitor"] = Monitor
        return Monitor
    raise AttributeError(f"module 'gradscope.keras' has no attribute {name!r}")
