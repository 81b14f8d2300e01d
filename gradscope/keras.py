"""Keras helpers: ``gradscope.keras.targets(model, x, y)`` for compiled multi-output models."""

from __future__ import annotations

from gradscope.frontends.python.keras import targets

__all__ = ["targets"]
