"""Keras helpers: ``targets(model, x, y)`` for compiled multi-output models; ``Monitor`` and
its finding ``Thresholds``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradscope._src.frontends.python.keras import targets
from gradscope._src.timeline.findings import Thresholds

if TYPE_CHECKING:
    from gradscope._src.timeline.monitor import Monitor

__all__ = ["Monitor", "Thresholds", "targets"]


def __getattr__(name: str) -> Any:
    # Monitor subclasses keras.callbacks.Callback: Keras (and TensorFlow) are imported when
    # it is first used, so that `import gradscope.keras` stays light.
    if name == "Monitor":
        from gradscope._src.timeline.monitor import Monitor

        globals()["Monitor"] = Monitor
        return Monitor
    raise AttributeError(f"module 'gradscope.keras' has no attribute {name!r}")
