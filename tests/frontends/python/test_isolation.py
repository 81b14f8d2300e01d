"""Every loss of a Python target is answered from the same variable state; strategy.run is
refused. Expected gradients come from bare TensorFlow on fresh variables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import gradscope
from gradscope._src.errors import TargetError

pytestmark = pytest.mark.tf


def _pairs(report: Any) -> dict[tuple[str, str], tuple[str, float | None]]:
    data = report.to_dict()
    return {
        (loss, name): (pair["status"], pair["norm"])
        for loss, body in data["losses"].items()
        for name, pair in body["variables"].items()
    }


def test_an_assign_in_one_loss_does_not_change_another_losss_gradient() -> None:
    import tensorflow as tf

    v = tf.Variable([1.0, 2.0], name="v")
    w = tf.Variable([3.0, 4.0], name="w")

    def loss_a() -> Any:
        v.assign([0.0, 0.0])
        return tf.reduce_sum(w * w)

    def loss_b() -> Any:
        return tf.reduce_sum(v * w)

    both = _pairs(gradscope.inspect({"losses": {"a": loss_a, "b": loss_b}, "variables": [v, w]}))
    alone = _pairs(gradscope.inspect({"losses": {"b": loss_b}, "variables": [v, w]}))

    fresh_v, fresh_w = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    with tf.GradientTape() as tape:
        expected = tape.gradient(tf.reduce_sum(fresh_v * fresh_w), fresh_w)
    norm = float(tf.norm(expected))
    assert both[("b", "w")] == alone[("b", "w")]
    assert both[("b", "w")][0] == "ok"
    assert math.isclose(both[("b", "w")][1], norm, rel_tol=1e-6)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])  # the run left the state as it was


def test_batch_normalization_statistics_do_not_leak_between_losses() -> None:
    import keras
    import tensorflow as tf

    x = tf.constant(np.random.default_rng(0).normal(3.0, 2.0, (16, 4)), tf.float32)
    bn = keras.layers.BatchNormalization()
    bn.build((None, 4))

    def train_loss() -> Any:
        return tf.reduce_sum(bn(x, training=True))

    def eval_loss() -> Any:
        return tf.reduce_sum(tf.square(bn(x, training=False)))

    report = gradscope.inspect({"losses": {"train": train_loss, "eval": eval_loss}})
    pairs = _pairs(report)

    twin = keras.layers.BatchNormalization()
    twin.build((None, 4))
    with tf.GradientTape() as tape:
        expected = tape.gradient(tf.reduce_sum(tf.square(twin(x, training=False))), twin.gamma)
    gamma = next(k for k in pairs if k[0] == "eval" and k[1].endswith("gamma"))
    assert math.isclose(pairs[gamma][1], float(tf.norm(expected)), rel_tol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), np.zeros(4, np.float32))


def test_a_loss_computed_through_strategy_run_is_refused() -> None:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        w = tf.Variable([1.0, 2.0], name="w")

    def loss() -> Any:
        per_replica = strategy.run(lambda: tf.reduce_sum(w * w))
        return strategy.reduce("SUM", per_replica, axis=None)

    with pytest.raises(TargetError, match=r"loss 'l' calls MirroredStrategy\.run; gradscope"):
        gradscope.inspect({"losses": {"l": loss}})
