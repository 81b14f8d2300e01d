"""Every gradient's norm and largest magnitude for one loss, in a few ops whatever its size.

Each op added to the traced graph costs Python time to build and start-up time to optimize,
and the graph runs once: so instead of a handful of reductions per gradient, the gradients of
one loss are flattened, joined into one vector per dtype, and reduced per segment (one
segment per gradient). Summation runs in element order within a segment, so two equal
gradients get the same sum wherever they sit; the result differs from ``reduce_sum`` only by
float rounding. ``unsorted_segment_max`` does not always propagate NaN, but the sum of squares
does, which is all ``LossStatic.facts`` needs: a NaN anywhere makes the norm NaN, an Inf makes
the largest magnitude Inf, and a segment with no elements reads as the dtype's lowest value
(``facts`` reads any negative largest magnitude as an empty, zero gradient).
"""

from __future__ import annotations

from typing import Any


def _dense(tf: Any, grad: Any) -> Any:
    """A gradient with repeated IndexedSlices rows summed (what densifying would give)."""
    if isinstance(grad, tf.IndexedSlices):
        unique, index = tf.unique(grad.indices)
        return tf.math.unsorted_segment_sum(grad.values, index, tf.shape(unique)[0])
    return grad


def _flat(tf: Any, grad: Any) -> Any:
    """A gradient as a real vector of float32 or float64."""
    g = _dense(tf, grad)
    if g.dtype.is_complex:
        g = tf.abs(g)
    if g.dtype in (tf.float16, tf.bfloat16):
        g = tf.cast(g, tf.float32)
    return tf.reshape(g, [-1])


def _size(tf: Any, flat: Any) -> Any:
    size = flat.shape[0]
    return size if size is not None else tf.size(flat)


def _segments(tf: Any, flats: list[Any]) -> tuple[Any, Any]:
    """``(norm, max |g|)`` per vector of ``flats`` (all of one dtype)."""
    joined = flats[0] if len(flats) == 1 else tf.concat(flats, 0)
    sizes = [_size(tf, f) for f in flats]
    if any(not isinstance(s, int) for s in sizes):
        sizes = tf.stack(sizes)
    ids = tf.repeat(tf.range(len(flats)), sizes)
    squares = tf.math.unsorted_segment_sum(tf.square(joined), ids, len(flats))
    largest = tf.math.unsorted_segment_max(tf.abs(joined), ids, len(flats))
    return tf.sqrt(squares), largest


def norms_and_maxima(tf: Any, grads: list[Any]) -> tuple[Any, Any]:
    """Two vectors, in the order of ``grads``: each gradient's L2 norm and ``max |g|``.

    Both are float64 when any gradient is, else float32.
    """
    flats = [_flat(tf, g) for g in grads]
    wide = any(f.dtype == tf.float64 for f in flats)
    out_dtype = tf.float64 if wide else tf.float32
    groups: dict[Any, list[int]] = {}
    for i, f in enumerate(flats):
        groups.setdefault(f.dtype, []).append(i)
    norms, largest, order = [], [], []
    for dtype, members in groups.items():
        n, m = _segments(tf, [flats[i] for i in members])
        if dtype != out_dtype:
            n, m = tf.cast(n, out_dtype), tf.cast(m, out_dtype)
        norms.append(n)
        largest.append(m)
        order += members
    if len(groups) == 1:
        return norms[0], largest[0]
    position = [order.index(i) for i in range(len(flats))]
    return (
        tf.gather(tf.concat(norms, 0), position),
        tf.gather(tf.concat(largest, 0), position),
    )
