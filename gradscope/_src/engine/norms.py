"""Every gradient's norm and largest magnitude for one loss, two vectors in gradient order.

Per gradient: flattened (one shared shape constant), then a sum of squares and a max of
magnitudes over axis 0 (one shared axis constant), the results stacked. Joining all of a
loss's gradients into one vector and reducing per segment took fewer ops but measured worse:
``tf.repeat`` for the segment ids builds a mask of gradients x largest size (gigabytes on
ResNet50), and the joined copies are as large as the model. ``reduce_max`` propagates NaN,
and over no elements gives ``-inf`` (``LossStatic.facts`` reads any negative largest
magnitude as an empty, zero gradient).
"""

from __future__ import annotations

from typing import Any


def _dense(tf: Any, grad: Any) -> Any:
    """A gradient with repeated IndexedSlices rows summed (what densifying would give)."""
    if isinstance(grad, tf.IndexedSlices):
        unique, index = tf.unique(grad.indices)
        return tf.math.unsorted_segment_sum(grad.values, index, tf.shape(unique)[0])
    return grad


def _flat(tf: Any, grad: Any, shape: Any) -> Any:
    """A gradient as a real vector of float32 or float64."""
    g = _dense(tf, grad)
    if g.dtype.is_complex:
        g = tf.abs(g)
    if g.dtype in (tf.float16, tf.bfloat16):
        g = tf.cast(g, tf.float32)
    return tf.reshape(g, shape)


def norms_and_maxima(tf: Any, grads: list[Any]) -> tuple[Any, Any]:
    """Two vectors, in the order of ``grads``: each gradient's L2 norm and ``max |g|``.

    Both are float64 when any gradient is, else float32.
    """
    shape = tf.constant([-1])
    axis = tf.constant(0)
    flats = [_flat(tf, g, shape) for g in grads]
    wide = any(f.dtype == tf.float64 for f in flats)
    dtype = tf.float64 if wide else tf.float32
    norms, largest = [], []
    for f in flats:
        n = tf.sqrt(tf.reduce_sum(tf.square(f), axis))
        m = tf.reduce_max(tf.abs(f), axis)
        norms.append(n if n.dtype == dtype else tf.cast(n, dtype))
        largest.append(m if m.dtype == dtype else tf.cast(m, dtype))
    return tf.stack(norms), tf.stack(largest)


def grouped(tf: Any, grads: list[Any]) -> tuple[Any, Any]:
    """``norms_and_maxima`` for eager gradients, a few ops per shape instead of per gradient.

    Gradients of one shape and dtype are stacked and reduced together over every axis but
    the first (a model's layers repeat their shapes: 100 matrices of one MLP are six ops).
    Each gradient is reduced in its own dtype, as ``norms_and_maxima`` does; the stacked copy
    lives only while its group is reduced. Returns numpy vectors in the order of ``grads``.
    """
    import numpy as np

    dense = [_dense(tf, g) for g in grads]
    groups: dict[tuple[tuple[int, ...], str], list[int]] = {}
    for index, g in enumerate(dense):
        groups.setdefault((tuple(g.shape), g.dtype.name), []).append(index)
    wide = any(g.dtype in (tf.float64, tf.complex128) for g in dense)
    dtype = np.float64 if wide else np.float32
    norms, largest = np.zeros(len(grads), dtype), np.zeros(len(grads), dtype)
    for (shape, _), members in groups.items():
        stacked = tf.stack([dense[i] for i in members])
        if stacked.dtype.is_complex:
            stacked = tf.abs(stacked)
        if stacked.dtype in (tf.float16, tf.bfloat16):
            stacked = tf.cast(stacked, tf.float32)
        axes = list(range(1, len(shape) + 1))
        norms[members] = tf.sqrt(tf.reduce_sum(tf.square(stacked), axes)).numpy()
        largest[members] = tf.reduce_max(tf.abs(stacked), axes).numpy()
    return norms, largest
