"""The Monitor's in-graph reductions against numpy in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.tf


def test_summarize_gives_float64_square_sums_and_zero_counts() -> None:
    import tensorflow as tf

    from gradscope._src.timeline import step_ops

    rng = np.random.default_rng(0)
    dense = rng.normal(size=(5, 3)).astype("float32") * 1e20  # squares overflow float32
    dense[0] = 0.0
    half = rng.normal(size=(7,)).astype("float16")
    rows = np.zeros((6, 2), "float32")
    rows[[1, 4]] = rng.normal(size=(2, 2))
    sparse = tf.IndexedSlices(tf.constant(rows[[1, 4]]), tf.constant([1, 4]), tf.constant([6, 2]))
    got = tf.function(step_ops.summarize)([tf.constant(dense), None, half, sparse])
    expected = [
        [np.sum(dense.astype("float64") ** 2), np.sum(dense == 0)],
        [0.0, 0.0],  # no gradient: the reader knows it is None
        [np.sum(half.astype("float64") ** 2), np.sum(half == 0)],
        [np.sum(rows.astype("float64") ** 2), np.sum(rows == 0)],
    ]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_dots_are_float64_dot_products_with_zero_for_none() -> None:
    import tensorflow as tf

    from gradscope._src.timeline import step_ops

    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 4, 3))
    wide = [tf.constant(a), tf.constant(b)]
    got = step_ops.dots([wide[0], None], [wide[1], wide[1]]).numpy()
    np.testing.assert_allclose(got, [np.sum(a * b), 0.0], rtol=1e-12)


def test_local_variable_without_a_strategy_is_one_plain_copy() -> None:
    from gradscope._src.timeline import step_ops

    variable = step_ops.local_variable([3], "float64", "gradscope_test")
    variable.assign([1.0, 2.0, 3.0])
    (copy,) = step_ops.copies(None, variable)
    np.testing.assert_array_equal(copy.numpy(), [1.0, 2.0, 3.0])


def test_the_recording_condition_stays_a_function_call() -> None:
    """Lowered to Switch/Merge, the recording's ops would join the train step's own graph
    and be optimized with it before the first step (bench/monitor.py measures the cost)."""
    import tensorflow as tf

    from gradscope._src.timeline.keras_hooks import _unlowered

    seen = {}

    @tf.function
    def step(x: Any) -> Any:
        done = tf.cond(x > 0, lambda: tf.reduce_sum(x * x) > 0, lambda: tf.constant(False))
        _unlowered(done)
        op = done.op
        while op.type == "Identity":
            op = op.inputs[0].op
        seen[op.type] = op.get_attr("_lower_using_switch_merge")
        return done

    assert bool(step(tf.constant(2.0))) and not bool(step(tf.constant(-2.0)))
    assert seen == {"StatelessIf": False}


def test_summarize_a_tensor_of_unknown_rank() -> None:
    import tensorflow as tf

    from gradscope._src.timeline import step_ops

    values = np.array([[0.0, 3.0], [4.0, 0.0]], "float32")
    summarize = tf.function(
        lambda t: step_ops.summarize([t]),
        input_signature=[tf.TensorSpec(None, tf.float32)],
    )
    np.testing.assert_array_equal(summarize(tf.constant(values)).numpy(), [[25.0, 2.0]])


@pytest.mark.parametrize("jit_compile", [False, True])
def test_summarize_stacks_small_tensors_and_matches_numpy(jit_compile: bool) -> None:
    """Small tensors of one shape are reduced in stacks, large ones alone; every row still
    is each tensor's own (gradients with weights, a None among them), also under XLA."""
    import tensorflow as tf

    from gradscope._src.timeline import step_ops

    rng = np.random.default_rng(2)
    shapes = [(4, 3), (4, 3), (5,), (4, 3), (130, 130), (5,)]  # 130*130 > SMALL: alone
    assert step_ops.SMALL < 130 * 130
    grads = [rng.normal(size=s).astype("float32") for s in shapes]
    for g in grads:
        g[rng.random(g.shape) < 0.3] = 0.0
    weights = [rng.normal(size=s).astype("float32") for s in shapes]
    variables = [tf.Variable(w) for w in weights]
    present = [True, False, True, True, True, True]

    @tf.function(jit_compile=jit_compile)
    def reduce(*given: Any) -> Any:
        tensors = [g if p else None for g, p in zip(given, present, strict=True)]
        return step_ops.summarize(tensors, variables)

    got = reduce(*[tf.constant(g) for g in grads]).numpy()
    expected = [
        [np.sum(g.astype("float64") ** 2) if p else 0.0, np.sum(g == 0) if p else 0.0,
         np.sum(w.astype("float64") ** 2)]
        for g, w, p in zip(grads, weights, present, strict=True)
    ]  # fmt: skip
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_summarize_builds_fewer_ops_for_many_small_tensors() -> None:
    """Tracing costs by the op: 40 biases of one shape reduce in a few ops, not 40 sets."""
    import tensorflow as tf

    from gradscope._src.timeline import step_ops

    graph = tf.Graph()
    with graph.as_default():
        tensors = [tf.compat.v1.placeholder(tf.float32, [16]) for _ in range(40)]
        before = len(graph.get_operations())
        step_ops.summarize(tensors)
        built = len(graph.get_operations()) - before
    assert built < 20, built
