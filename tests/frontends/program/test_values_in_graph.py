"""The numbers a watched ``tf.function`` execution hands on (``values.in_graph``) against numpy
in float64: each gradient measured as it is made, in its lowered ``tf.cond``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.tf


def test_each_gradients_norm_and_largest_are_numpys_and_a_step_not_measured_runs_none() -> None:
    import tensorflow as tf

    from gradscope._src.watcher import values

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(4, 3)).astype("float32") * 1e20  # squares overflow float32
    half = rng.normal(size=(7,)).astype("float16")
    modulus = np.array([3 + 4j, -1j, 0.5], "complex64")
    rows, indices = rng.normal(size=(3, 2)).astype("float32"), np.array([2, 0, 2])
    nan = np.array([1.0, np.nan, -2.0], "float32")
    scale = 4.0
    got: list[values.Numbers] = []
    flag = tf.Variable(True)

    @tf.function
    def step(*given: Any) -> Any:
        sliced = tf.IndexedSlices(given[3], tf.constant(indices), tf.constant([4, 2]))
        grads = [given[0], None, given[1], given[2], sliced, tf.zeros([0, 3]), given[4]]
        target = tf.reduce_sum(given[0])
        values.in_graph(flag, [target], grads, lambda n, _: got.append(n), tf.constant(scale))
        return target

    inputs = [tf.constant(x) for x in (dense, half, modulus, rows, nan)]
    step(*inputs)
    flag.assign(False)
    step(*inputs)  # not measured: the sink hears nothing
    assert len(got) == 1
    value, numbers, given_scale = got[0]

    summed = np.zeros((2, 2), "float32")  # the rows densifying would sum, in their dtype
    np.add.at(summed, [1, 0, 1], rows)  # (the indices 0 and 2 as rows 0 and 1)
    wanted = [dense, None, half, np.abs(modulus), summed, np.zeros((0, 3))]
    for measured, g in zip(numbers[:6], wanted, strict=True):
        if g is None:
            assert measured is None
            continue
        assert measured is not None
        x = g.astype("float64") / scale  # TensorFlow's modulus and rows' sum: in their dtype too
        norm = np.sqrt(np.sum(np.square(x))) if x.size else 0.0
        np.testing.assert_allclose(measured[0], norm, rtol=1e-12)
        assert measured[1] == (np.max(np.abs(x)) if x.size else 0.0)  # the same number
    assert numbers[6] is not None and np.isnan(numbers[6][0]) and np.isnan(numbers[6][1])
    assert given_scale == scale
    assert value == pytest.approx(float(np.sum(dense.astype("float64"))) / scale, rel=1e-6)

    graph = step.get_concrete_function(*inputs).graph
    conds = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert conds and all(op.get_attr("_lower_using_switch_merge") for op in conds)
