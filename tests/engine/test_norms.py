"""Norms and max |g| of a loss's gradients against bare TensorFlow."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytestmark = pytest.mark.tf


def _run(grads_fn):  # type: ignore[no-untyped-def]
    import tensorflow as tf

    from gradscope._src.engine.norms import norms_and_maxima

    @tf.function
    def f():  # type: ignore[no-untyped-def]
        grads = grads_fn(tf)
        norms, largest = norms_and_maxima(tf, grads)
        dense = [tf.abs(tf.convert_to_tensor(g)) for g in grads]
        expected = [(tf.norm(tf.cast(g, tf.float64)), tf.reduce_max(g)) for g in dense]
        return norms, largest, expected

    norms, largest, expected = f()
    return norms.numpy(), largest.numpy(), [(float(a), float(b)) for a, b in expected]


def test_mixed_dtypes_keep_their_order_and_match_bare_tensorflow() -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in [(3, 4), (5,), (2, 2, 2), (7,)]]

    def grads(tf):  # type: ignore[no-untyped-def]
        dtypes = [tf.float32, tf.float64, tf.float16, tf.float32]
        return [tf.constant(a, d) for a, d in zip(arrays, dtypes, strict=True)]

    norms, largest, expected = _run(grads)  # bare TensorFlow's tf.norm and reduce_max
    assert norms.dtype == np.float64
    for n, m, (en, em) in zip(norms, largest, expected, strict=True):
        assert n == pytest.approx(en, rel=1e-3)
        assert m == pytest.approx(em, rel=1e-3)


def test_nan_inf_zero_and_empty() -> None:
    def grads(tf):  # type: ignore[no-untyped-def]
        return [
            tf.constant([1.0, math.nan, 2.0]),
            tf.constant([1.0, math.inf]),
            tf.zeros([4]),
            tf.zeros([0, 3]),
            tf.constant([1e-30, 0.0]),
        ]

    norms, largest, _ = _run(grads)  # (bare reductions of an empty tensor: not compared)
    assert math.isnan(norms[0])  # the norm carries the NaN even where the max does not
    assert largest[1] == math.inf
    assert norms[2] == 0.0 and largest[2] == 0.0
    assert norms[3] == 0.0 and largest[3] < 0  # no elements: read as an empty, zero gradient
    assert norms[4] == 0.0 and largest[4] == pytest.approx(1e-30)  # squares underflow


def test_indexed_slices_sum_repeated_rows_and_complex_takes_magnitudes() -> None:
    def grads(tf):  # type: ignore[no-untyped-def]
        slices = tf.IndexedSlices(
            tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([1, 1]), tf.constant([3, 2])
        )
        return [slices, tf.constant([3 + 4j], tf.complex64)]

    norms, largest, _ = _run(grads)
    assert norms[0] == pytest.approx(math.hypot(4.0, 6.0))
    assert largest[0] == pytest.approx(6.0)
    assert norms[1] == pytest.approx(5.0) and largest[1] == pytest.approx(5.0)


def test_grouped_eager_norms_are_the_traced_ones() -> None:
    """``grouped`` (the eager route's) against ``norms_and_maxima`` and bare tf.norm, eagerly,
    on shapes that repeat and ones that do not, NaN, inf, empty, sparse and complex."""
    import tensorflow as tf

    from gradscope._src.engine.norms import grouped

    rng = np.random.default_rng(1)
    grads = [tf.constant(rng.standard_normal((3, 4)), tf.float32) for _ in range(3)]
    grads += [
        tf.constant([1.0, math.nan, 2.0]),
        tf.constant([1.0, math.inf, 5.0]),
        tf.zeros([0, 3]),
        tf.constant(2.5),
        tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([1, 1]), [3, 2]),
        tf.constant([3 + 4j], tf.complex64),
    ]
    norms, largest = grouped(tf, grads)
    wanted_norms, wanted_largest = _run(lambda tf_: grads)[:2]
    assert norms.dtype == np.float32
    np.testing.assert_allclose(norms, wanted_norms, rtol=1e-6)
    np.testing.assert_allclose(largest, wanted_largest, rtol=1e-6)
    for g, n in zip(grads[:3], norms[:3], strict=True):
        assert n == pytest.approx(float(tf.norm(g)), rel=1e-6)
    wide, _ = grouped(tf, [tf.constant([3.0, 4.0], tf.float64), tf.constant([1.0])])
    assert wide.dtype == np.float64 and list(wide) == [5.0, 1.0]
