"""--max-elements holds for every tensor a spec makes, before anything is allocated."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gradscope._src import api
from gradscope._src.errors import BuildError
from gradscope._src.frontends.yaml.forward import limits
from tests.conftest import RunCli

pytestmark = pytest.mark.tf

WriteSpec = Callable[..., str]


def _ops(fn: Callable[[], object]) -> list[object]:
    """The ops of ``fn`` traced as a ``tf.function`` (nothing runs)."""
    import tensorflow as tf

    return list(tf.function(fn).get_concrete_function().graph.get_operations())


def test_oversized_reports_the_exact_size_of_a_static_shape() -> None:
    import tensorflow as tf

    found = limits.oversized(_ops(lambda: tf.reduce_sum(tf.zeros([20000, 20000]))), 2**26)
    assert found is not None and found.op.type == "Fill"
    assert (found.elements, found.exact, found.shape) == (400_000_000, True, (20000, 20000))
    assert found.message(2**26) == (
        "would make a tensor of 400000000 elements (shape [20000, 20000]), "
        "more than --max-elements 67108864"
    )
    assert limits.oversized(_ops(lambda: tf.reduce_sum(tf.zeros([8192, 8192]))), 2**26) is None


def test_oversized_refuses_a_size_computed_from_a_value() -> None:
    import tensorflow as tf

    v = tf.Variable([3.0, 4.0])

    def computed() -> object:
        n = tf.cast(tf.reduce_max(v), tf.int32)
        return tf.reduce_sum(tf.zeros(tf.stack([n, n])))

    found = limits.oversized(_ops(computed), 2**26)
    assert found is not None and found.op.type == "Fill"
    assert found.elements is None and found.shape == (None, None)
    assert "depends on a value computed when the spec runs (Fill)" in found.message(2**26)


def test_oversized_bounds_data_dependent_sizes_by_their_inputs() -> None:
    import tensorflow as tf

    def masked(n: int) -> Callable[[], object]:
        def fn() -> object:
            rows = tf.boolean_mask(tf.ones([n, 4]), tf.ones([n]) > 0)  # [None, 4]
            return tf.reduce_sum(tf.matmul(rows, tf.ones([4, 3])))

        return fn

    assert limits.oversized(_ops(masked(1000)), 2**26) is None

    def noise_like_masked() -> object:  # what Dropout does to a masked tensor
        rows = tf.boolean_mask(tf.ones([1000, 4]), tf.ones([1000]) > 0)
        return tf.reduce_sum(rows * tf.random.uniform(tf.shape(rows)))

    assert limits.oversized(_ops(noise_like_masked), 2**26) is None

    def outer() -> object:
        idx = tf.cast(tf.where(tf.ones([100_000]) > 0), tf.float32)  # [None, 1]
        return tf.reduce_sum(tf.matmul(idx, idx, transpose_b=True))  # [None, None]

    found = limits.oversized(_ops(outer), 2**26)
    assert found is not None and found.op.type == "MatMul" and not found.exact
    assert found.elements is not None and found.elements >= 100_000**2
    assert found.message(2**26).startswith("may make a tensor of up to")


def test_spec_limit_is_inclusive_and_names_the_node(write_spec: WriteSpec) -> None:
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [4]}
        nodes:
          - {name: t, op: tile, inputs: [w], attrs: {multiples: [3]}}
          - {name: s, op: reduce_sum, inputs: [t]}
        losses: {l: s}
        """
    )
    assert api.inspect(path, max_elements=12).loss("l").pair("w").status == "ok"
    with pytest.raises(BuildError) as info:
        api.inspect(path, max_elements=11)
    assert str(info.value) == (
        f"{path}:5:5: node 't' (tile): would make a tensor of 12 elements (shape [12]), "
        "more than --max-elements 11"
    )


def test_keras_weights_are_checked_before_they_exist(write_spec: WriteSpec) -> None:
    import keras

    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [2, 3]}
        nodes:
          - {name: d, op: layer, inputs: [x], attrs: {class: Dense, config: {units: 4}}}
          - {name: s, op: reduce_sum, inputs: [d]}
        losses: {l: s}
        """
    )
    original = keras.layers.Layer.add_weight
    assert api.inspect(path, max_elements=12).loss("l").pair("d/kernel").status == "ok"
    with pytest.raises(BuildError) as info:
        api.inspect(path, max_elements=11)
    assert str(info.value) == (
        f"{path}:5:5: node 'd' (layer): would make a weight 'kernel' of 12 elements "
        "(shape [3, 4]), more than --max-elements 11"
    )
    assert keras.layers.Layer.add_weight is original  # the hook is gone after a refusal


def test_weights_within_refuses_before_keras_allocates() -> None:
    import keras

    calls: list[object] = []
    layer = keras.layers.Dense(3)
    with limits.weights_within(keras, 5), pytest.raises(limits.TooLarge):
        layer.add_weight(shape=(2, 3), initializer=lambda *a, **k: calls.append(a))
    assert calls == []  # the initializer never ran


def test_check_outputs_counts_tensors_before_making_them() -> None:
    limits.check_outputs("split", [None], {"num_or_size_splits": limits.MAX_OUTPUTS})
    limits.check_outputs("split", [None, [1, 2, 3]], {})
    with pytest.raises(limits.TooLarge, match="would make 10001 tensors"):
        limits.check_outputs("split", [None], {"num_or_size_splits": limits.MAX_OUTPUTS + 1})
    with pytest.raises(limits.TooLarge):
        limits.check_outputs("dynamic_partition", [None, None], {"num_partitions": 10**6})
    limits.check_outputs("reduce_sum", [None], {"num": 10**9})  # not a many-output op


def test_python_targets_are_not_held_to_max_elements() -> None:
    """A Python target is the user's own code and runs as written (see the README)."""
    import tensorflow as tf

    def build() -> dict[str, object]:
        w = tf.Variable(tf.ones([10]), name="w")
        return {"losses": {"l": lambda: tf.reduce_sum(tf.tile(w, [3]))}}

    report = api.inspect(build, max_elements=4)
    assert report.loss("l").pair("w").status == "ok"


def test_empty_floating_tensors_are_refused_before_tensorflow_runs(
    write_spec: WriteSpec, run_cli: RunCli
) -> None:
    """Found by the fuzz suite: the gradient of LayerNormalization of a [0, 3] variable made
    TensorFlow's graph optimizer die of SIGFPE (exit 136). Run as a subprocess, so that a
    regression fails this test instead of killing the test run."""
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [0, 3]}
        nodes:
          - {name: n, op: layer, inputs: [w], attrs: {class: LayerNormalization}}
          - {name: s, op: reduce_sum, inputs: [n]}
        losses: {l: s}
        """
    )
    result = run_cli("inspect", path, "-q")
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stderr.strip() == (
        f"{path}:3:3: variables.w: would make an empty tensor (shape [0, 3]); TensorFlow's "
        "graph optimizer can crash on empty floating-point tensors, so a spec may not make one"
    )


def test_empty_tensors_made_by_nodes_are_refused_but_integer_ones_are_not(
    write_spec: WriteSpec,
) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [4, 3]}
          m: {shape: [4], dtype: bool}
        variables:
          w: {shape: [3]}
        nodes:
          - {name: sel, op: boolean_mask, inputs: [x, m]}
          - {name: h, op: multiply, inputs: [sel, w]}
          - {name: s, op: reduce_sum, inputs: [h]}
          - {name: none, op: slice, inputs: [w], attrs: {begin: [0], size: [0]}}
          - {name: t, op: reduce_sum, inputs: [none]}
        losses: {l: s}
        """
    )
    with pytest.raises(BuildError) as info:
        api.inspect(path)
    assert str(info.value).startswith(
        f"{path}:11:5: node 'none' (slice): would make an empty tensor (shape [0])"
    )
    # boolean_mask makes integer shape vectors of shape [0] inside: not refused
    text = Path(path).read_text(encoding="utf-8").split("  - {name: none")[0] + "losses: {l: s}\n"
    Path(path).write_text(text, encoding="utf-8")
    assert api.inspect(path).loss("l").pair("w").status == "ok"
