"""A gradient or a weight reduced where it lives to the few numbers a timeline records.

Plain data handed from whoever measured it (the Keras ``Monitor``'s traced step, the watcher
of ``gradscope run``) to the timeline's recorder, which reads it instead of the elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Summary:
    """A gradient or a weight already reduced where it lives (inside a traced step, on the
    device), so that only a few numbers reach the recorder.

    Attributes:
        square_sum: the sum of its squared elements (NaN or Inf when an element is).
        zeros: how many elements are exactly zero.
        shape: its shape.
        sparse: whether TensorFlow gave it as ``IndexedSlices``.
        values: its elements (dense), kept only for a TensorBoard histogram, else None.
    """

    square_sum: float
    zeros: int
    shape: tuple[int, ...]
    sparse: bool = False
    values: Any = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def norm(self) -> float | None:
        finite = math.isfinite(self.square_sum)
        return math.sqrt(self.square_sum) if finite and self.square_sum >= 0 else None
