"""Keras helpers: ``targets(model, x, y)`` for compiled multi-output models; ``Monitor`` and
its finding ``Thresholds``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradscope._src.frontends.python import keras_ops
from gradscope._src.frontends.python.keras import targets
from gradscope._src.timeline.findings import Thresholds

if TYPE_CHECKING:
    from gradscope._src.timeline.monitor import Monitor

__all__ = ["Monitor", "Thresholds", "targets"]


def __getattr__(name: str) -> Any:
    # Monitor subclasses keras.callbacks.Callback: Keras (and TensorFlow) are imported when
    # it is first used, so that `import gradscope.keras` stays light and patches nothing.
    if name == "Monitor":
        from gradscope._src.timeline import traced
        from gradscope._src.timeline.monitor import Monitor, _user_line

        # A program that uses the Monitor asks for what it reads as models are built, before
        # the Monitor is made: where each Keras operation is written (keras_ops.py) and the
        # flags each train step is traced with (traced.py). Both go through the registry
        # (patching.py) and pass every call through unchanged.
        keras_ops.for_good()
        traced.observe(_user_line)
        globals()["Monitor"] = Monitor
        return Monitor
    raise AttributeError(f"module 'gradscope.keras' has no attribute {name!r}")
