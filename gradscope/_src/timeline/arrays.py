"""Gradients as numpy arrays, whatever TensorFlow handed over (a tensor, ``IndexedSlices``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def dense(gradient: Any) -> np.ndarray[Any, Any]:
    """A gradient as a dense numpy array (``IndexedSlices`` summed into their rows)."""
    if all(hasattr(gradient, a) for a in ("values", "indices", "dense_shape")):
        shape = tuple(int(d) for d in np.asarray(gradient.dense_shape))
        out = np.zeros(shape, dtype=np.asarray(gradient.values).dtype)
        np.add.at(out, np.asarray(gradient.indices), np.asarray(gradient.values))
        return out
    return np.asarray(gradient)


def is_sparse(gradient: Any) -> bool:
    """Whether ``gradient`` is ``IndexedSlices`` (or looks like them)."""
    return all(hasattr(gradient, a) for a in ("values", "indices", "dense_shape"))
