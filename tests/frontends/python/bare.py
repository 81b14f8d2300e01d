"""Bare TensorFlow answers for Python targets, computed the way a user would.

Nothing here uses gradscope: each loss runs eagerly under its own ``tf.GradientTape`` (or,
for the traced answer, inside ``tf.function`` with ``tf.gradients``), and variables are named
by their Keras ``path`` or their TensorFlow name.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import tensorflow as tf

from tests.reference import Grad

DATA = Path(__file__).resolve().parent / "data"


def name_of(variable: Any) -> str:
    path = getattr(variable, "path", None)
    return str(path) if path else variable.name.split(":")[0]


def _grad(g: Any) -> Grad:
    if g is None:
        return Grad(none=True)
    dense = np.asarray(tf.convert_to_tensor(g), dtype=np.float64)
    finite = bool(np.isfinite(dense).all())
    return Grad(False, float(np.linalg.norm(dense)), isinstance(g, tf.IndexedSlices), finite,
                not dense.any())  # fmt: skip


def tape(fn: Callable[[], Any], variables: Sequence[Any]) -> tuple[float, dict[str, Grad]]:
    """``(value, {variable: Grad})`` of one loss, eagerly under a GradientTape."""
    with tf.GradientTape() as t:
        value = fn()
        target = tf.convert_to_tensor(value)  # a tf.Variable returned is read on the tape
    grads = t.gradient(target, list(variables))
    total = float(tf.reduce_sum(tf.cast(target, tf.float64)))
    return total, {name_of(v): _grad(g) for v, g in zip(variables, grads, strict=True)}


def traced(fn: Callable[[], Any], variables: Sequence[Any]) -> dict[str, Grad]:
    """``{variable: Grad}`` of one loss traced by ``tf.function`` and ``tf.gradients``."""
    none: list[bool] = []

    @tf.function
    def grads() -> list[Any]:
        found = tf.gradients(fn(), list(variables))
        none[:] = [g is None for g in found]  # known while tracing
        return [tf.zeros(()) if g is None else tf.convert_to_tensor(g) for g in found]

    values = grads()
    return {
        name_of(v): Grad(none=True) if is_none else _grad(g)
        for v, g, is_none in zip(variables, values, none, strict=True)
    }


def tapes(
    losses: Mapping[str, Callable[[], Any]], variables: Sequence[Any]
) -> dict[str, tuple[float, dict[str, Grad]]]:
    return {name: tape(fn, variables) for name, fn in losses.items()}


def load_file(path: Path) -> ModuleType:
    """Import a loose file as its own module (what a user's ``python train.py`` would see)."""
    name = f"bare_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def line_of(path: Path, text: str) -> int:
    """The 1-based line of ``path`` that contains ``text`` (exactly one must)."""
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, f"{text!r} is on lines {lines} of {path}"
    return lines[0]
