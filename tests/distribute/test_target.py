"""Python targets under ``--strategy mirrored`` (2 logical CPU devices), against bare TensorFlow.

A target's losses are closed over their data, so every replica runs the whole loss: each
replica's gradient is then the one-device gradient, and so is their all-reduced mean, which
the pair shows. The reference is a bare ``GradientTape`` over the same values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.distribute.target import UNMIRRORED, WHOLE
from gradscope._src.errors import UsageError
from gradscope._src.results import report as m
from gradscope._src.results.status import ProblemKind

pytestmark = [pytest.mark.tf, pytest.mark.replicas]

#: A target that makes other initial values each time its function is called (as an
#: unseeded initializer does); the pass across replicas builds it a second time.
TARGET = """
import numpy as np
import tensorflow as tf

BUILDS = [0]
X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(3, 4)


def values(build):
    return np.linspace(-0.5, 0.5, 8, dtype=np.float32).reshape(4, 2) * build


def build():
    BUILDS[0] += 1
    w = tf.Variable(values(BUILDS[0]), name="w")
    b = tf.Variable(np.ones(2, np.float32), name="b")
    spare = tf.Variable(np.ones(2, np.float32), name="spare")

    def replica_one_only():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        return tf.reduce_sum(tf.matmul(X, w)) * tf.cast(tf.equal(replica, 0), tf.float32)

    return {
        "losses": {
            "fit": lambda: tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(X, w) + b))),
            "frozen": lambda: tf.reduce_sum(tf.stop_gradient(tf.matmul(X, w)) * b),
            "first": replica_one_only,
            "eager": lambda: tf.reduce_sum(w) * float(abs(w.numpy()).sum()),  # .numpy(): no trace
        },
        "variables": [w, b, spare],
    }
"""


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("target") / "replicated.py"
    path.write_text(TARGET, encoding="utf-8")
    return f"{path}:build"


@pytest.fixture(scope="module", params=["mirrored", "multiworker"])
def report(target: str, request: pytest.FixtureRequest) -> m.Report:
    """The target on 2 replicas: in this process, and in 2 local worker processes."""
    import gradscope

    return gradscope.inspect(target, strategy=request.param, replicas=2)


def bare(build: int) -> dict[str, list[np.ndarray | None]]:
    """Every loss's gradients for ``[w, b, spare]`` as the first build made them, on one
    device (``first``: replica 0's loss; replica 1's is all zero)."""
    import tensorflow as tf

    namespace: dict[str, Any] = {}
    exec(TARGET, namespace)  # the target's own helpers, no gradscope
    x = namespace["X"]
    w = tf.Variable(namespace["values"](build))
    b, spare = tf.Variable(np.ones(2, np.float32)), tf.Variable(np.ones(2, np.float32))
    losses = {
        "fit": lambda: tf.reduce_mean(tf.square(tf.nn.relu(tf.matmul(x, w) + b))),
        "frozen": lambda: tf.reduce_sum(tf.stop_gradient(tf.matmul(x, w)) * b),
        "first": lambda: tf.reduce_sum(tf.matmul(x, w)),
    }
    out = {}
    for name, loss in losses.items():
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, [w, b, spare])
        out[name] = [None if g is None else g.numpy() for g in grads]
    return out


def test_target_replicas_agree_with_the_one_device_gradient(report: m.Report) -> None:
    expected = bare(build=1)  # the one-device run's values, copied into the mirrored build
    names = ["w", "b", "spare"]
    for loss in report.losses:
        if loss.name in ("first", "eager"):
            continue
        for pair in loss.pairs:
            grad = expected[loss.name][names.index(pair.variable)]
            where = f"{loss.name} x {pair.variable}"
            if grad is None:
                assert m.is_none(pair.status) and pair.norm is None, where
                assert {r.status for r in pair.replicas} == {pair.status}, where
                continue
            norm = float(np.linalg.norm(grad))
            assert pair.status == m.OK and pair.norm == pytest.approx(norm, rel=1e-5), where
            assert [(r.status, r.norm) for r in pair.replicas] == [
                (m.OK, pytest.approx(norm, rel=1e-5))] * 2, where  # fmt: skip
    statuses = {(loss.name, p.variable): p.status for loss, p in report.pairs()}
    assert statuses[("frozen", "w")] == m.STOPPED and statuses[("fit", "spare")] == m.DISCONNECTED


def test_target_replica_that_loses_its_gradient_is_a_replica_mismatch(report: m.Report) -> None:
    grad = bare(build=1)["first"][0]
    assert grad is not None
    pair = report.loss("first").pair("w")
    assert [r.status for r in pair.replicas] == [m.OK, m.ZERO]
    assert pair.replicas[0].norm == pytest.approx(float(np.linalg.norm(grad)), rel=1e-5)
    assert pair.norm == pytest.approx(float(np.linalg.norm(grad)) / 2, rel=1e-5)  # the mean
    (mismatch,) = [p for p in report.problems if p.kind == ProblemKind.REPLICA_MISMATCH]
    assert (mismatch.loss, mismatch.variable) == ("first", "w")
    assert "replica 0 ok; replica 1 zero" in mismatch.message


def test_target_loss_that_only_runs_eagerly_is_not_run_per_replica(report: m.Report) -> None:
    pair = report.loss("eager").pair("w")
    assert pair.status == m.OK and pair.replicas == ()  # answered eagerly, on one device
    assert "--strategy: loss 'eager' runs only eagerly (its trace failed)" in " ".join(report.notes)


def test_target_report_says_every_replica_ran_the_whole_loss(report: m.Report) -> None:
    assert WHOLE in report.notes and UNMIRRORED not in report.notes
    d = report.distributed
    assert d is not None and d.reduced == "mean" and d.shards == ()
    assert report.to_dict()["distribution"]["reduced"] == "mean"


def test_target_object_is_run_with_its_own_variables_and_said_so() -> None:
    import tensorflow as tf

    import gradscope

    w = tf.Variable([1.0, -2.0], name="w")
    target = gradscope.Target(losses={"l": lambda: tf.reduce_sum(w * w)})
    report = gradscope.inspect(target, strategy="mirrored", replicas=2)
    pair = report.loss("l").pair("w")
    norm = float(np.linalg.norm(2 * w.numpy()))
    assert (pair.status, pair.norm) == (m.OK, pytest.approx(norm))
    assert [r.norm for r in pair.replicas] == pytest.approx([norm, norm])
    assert UNMIRRORED in report.notes


def test_target_object_under_multiworker_is_refused() -> None:
    import tensorflow as tf

    import gradscope

    w = tf.Variable(1.0, name="w")
    target = gradscope.Target(losses={"l": lambda: w * w})
    with pytest.raises(UsageError, match=r"given as an object .* cannot be sent to worker"):
        gradscope.inspect(target, strategy="multiworker", replicas=2)


KERAS = """
import numpy as np
import tensorflow as tf
import keras

X = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(6, 4)
Y = np.linspace(0.0, 1.0, 6, dtype=np.float32).reshape(6, 1)


def net():
    seeded = keras.initializers.GlorotUniform(seed=3)
    return keras.Sequential([keras.Input((4,)),
                             keras.layers.Dense(3, activation="tanh", kernel_initializer=seeded),
                             keras.layers.Dense(1, kernel_initializer=seeded)])


def build():
    model = net()
    return {"losses": {"mse": lambda: tf.reduce_mean((model(X) - Y) ** 2)}}
"""


def test_keras_target_built_again_keeps_the_one_device_names_and_norms(
    tmp_path: Path,
) -> None:
    import keras
    import tensorflow as tf

    import gradscope

    path = tmp_path / "keras_target.py"
    path.write_text(KERAS, encoding="utf-8")
    keras.backend.clear_session()  # layer names start afresh, as in a new process
    report = gradscope.inspect(f"{path}:build", strategy="mirrored", replicas=2)
    namespace: dict[str, Any] = {}
    exec(KERAS, namespace)
    model = namespace["net"]()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(namespace["X"]) - namespace["Y"]) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    norms = [float(np.linalg.norm(g.numpy())) for g in grads]
    pairs = report.loss("mse").pairs
    assert [p.variable for p in pairs] == [
        "sequential/dense/kernel", "sequential/dense/bias",
        "sequential/dense_1/kernel", "sequential/dense_1/bias",
    ]  # fmt: skip
    assert [p.norm for p in pairs] == pytest.approx(norms, rel=1e-5)
    for pair, norm in zip(pairs, norms, strict=True):
        each = [(r.status, r.norm) for r in pair.replicas]
        assert each == [(m.OK, pytest.approx(norm, rel=1e-5))] * 2
    assert UNMIRRORED not in report.notes
