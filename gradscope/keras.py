"""Keras helpers: ``targets(model, x, y)`` for compiled multi-output models; ``Monitor``."""

from __future__ import annotations

from gradscope.targets.keras import targets
from gradscope.timeline.monitor import Monitor

__all__ = ["Monitor", "targets"]
