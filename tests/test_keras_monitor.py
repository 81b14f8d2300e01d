"""gradscope.keras.Monitor on real training runs, every number checked against bare TensorFlow.

The scenarios (tests/timeline/scenarios.py) train with ``shuffle=False`` and snapshot the
weights around every step; here bare TensorFlow recomputes each recorded step's gradients
from those weights and that batch, and the timeline must agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.timeline import scenarios

pytestmark = pytest.mark.tf


def _mse(y: Any, pred: Any) -> Any:
    import tensorflow as tf

    return tf.reduce_mean(tf.square(tf.convert_to_tensor(y) - pred))


def bare(
    run: scenarios.Run, step: int, parts: Any
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Bare TensorFlow's gradients of a recorded step: of the total, and of each loss part."""
    import tensorflow as tf

    model = run.model
    for variable, value in zip(model.trainable_variables, run.before[step], strict=True):
        variable.assign(value)
    x, y = run.batch_of(step)
    with tf.GradientTape(persistent=True) as tape:
        pred = model(x, training=True)
        losses = parts(y, pred, model)
        total = tf.add_n(list(losses.values()))
    names = [v.path for v in model.trainable_variables]
    grads = dict(zip(names, tape.gradient(total, model.trainable_variables), strict=True))
    per = {
        name: dict(zip(names, tape.gradient(value, model.trainable_variables), strict=True))
        for name, value in losses.items()
    }
    return grads, per


def _norm(g: Any) -> float:
    return float(np.linalg.norm(np.asarray(g, dtype=np.float64)))


def assert_matches_bare(run: scenarios.Run, parts: Any) -> None:
    """Every recorded step's norm, zero fraction, status and weight norm agree with bare TF."""
    for record in run.timeline["steps"]:
        step = record["step"]
        grads, _ = bare(run, step, parts)
        after = dict(
            zip([v.path for v in run.model.trainable_variables], run.after[step], strict=True)
        )
        assert set(record["variables"]) == set(grads)
        for name, v in record["variables"].items():
            g = np.asarray(grads[name])
            if not np.all(np.isfinite(g)):
                assert v["status"] == "nan" and v["norm"] is None, (step, name)
                continue
            zero = float(np.mean(g == 0))
            assert v["status"] == ("zero" if zero == 1.0 else "ok"), (step, name)
            assert v["norm"] == pytest.approx(_norm(g), rel=1e-4, abs=1e-7), (step, name)
            assert v["zero_fraction"] == zero, (step, name)
            if np.all(np.isfinite(after[name])):
                assert v["weight_norm"] == pytest.approx(_norm(after[name]), rel=1e-5), (step, name)
            assert v["shape"] == list(g.shape)


def _total(y: Any, pred: Any, model: Any) -> dict[str, Any]:
    import tensorflow as tf

    out = {"mse": _mse(y, pred)}
    if model.losses:
        out["added"] = tf.add_n([tf.reduce_sum(x) for x in model.losses])
    return out


@pytest.mark.parametrize("board", [True, False], ids=["whole-gradients", "reduced-in-graph"])
def test_monitor_healthy_model_matches_bare_tensorflow_and_finds_nothing(board: bool) -> None:
    run = scenarios.healthy(board)
    assert [r["step"] for r in run.timeline["steps"]] == [1, *range(2, 33, 2)]  # step 1, every 2
    assert_matches_bare(run, _total)
    assert run.timeline["findings"] == []
    assert all(r["site"].startswith("tests/timeline/scenarios.py:") for r in run.timeline["steps"])


def test_monitor_dying_relu_is_dead_from_the_step_bare_tensorflow_says() -> None:
    run = scenarios.dying_relu()  # an activity regularizer: the add_loss path of compute_loss
    assert_matches_bare(run, _total)
    dead = {f["variable"]: f for f in run.timeline["findings"] if f["kind"] == "dead"}
    kernel = next(v.path for v in run.model.trainable_variables if v.path.endswith("hidden/kernel"))
    assert kernel in dead
    # The first step from which bare TF's gradient is >= 90% zeros for 3 recorded steps in a row.
    fractions = [
        (r["step"], float(np.mean(np.asarray(bare(run, r["step"], _total)[0][kernel]) == 0)))
        for r in run.timeline["steps"]
    ]
    first = next(
        s
        for i, (s, _) in enumerate(fractions)
        if all(f >= 0.9 for _, f in fractions[i : i + 3]) and len(fractions[i : i + 3]) == 3
    )
    assert dead[kernel]["from_step"] == first > 1  # dying, not dead from the start
    assert "dying ReLU" in dead[kernel]["message"]
    assert not any(
        f["kind"] == "dead" and f["variable"].endswith("head/bias")
        for f in run.timeline["findings"]
    )


def test_monitor_exploding_learning_rate_explodes_then_nan() -> None:
    run = scenarios.exploding()
    assert_matches_bare(run, _total)
    kernel = next(v.path for v in run.model.trainable_variables if v.path.endswith("kernel"))
    kinds = {f["kind"]: f for f in run.timeline["findings"] if f["variable"] == kernel}
    assert set(kinds) == {"exploding", "nan"}
    assert kinds["exploding"]["from_step"] < kinds["nan"]["from_step"]
    first_nan = next(
        r["step"]
        for r in run.timeline["steps"]
        if not np.all(np.isfinite(bare(run, r["step"], _total)[0][kernel]))
    )
    assert kinds["nan"]["from_step"] == first_nan


def _two(y: Any, pred: Any, model: Any) -> dict[str, Any]:
    return {"up": _mse(y[0], pred[0]), "down": _mse(y[1], pred[1])}


@pytest.mark.parametrize("board", [True, False], ids=["whole-gradients", "reduced-in-graph"])
def test_monitor_conflicting_losses_have_the_cosine_bare_tensorflow_has(board: bool) -> None:
    run = scenarios.conflicting(board)
    assert_matches_bare(run, _two)
    for record in run.timeline["steps"]:
        _, per = bare(run, record["step"], _two)
        assert set(record["losses"]) == {"up", "down"}
        for loss, stats in record["losses"].items():
            for name, v in stats["variables"].items():
                assert v["norm"] == pytest.approx(_norm(per[loss][name]), rel=1e-4)
        (pair,) = record["cosine"]
        assert pair["losses"] == ["up", "down"]
        for name, cos in pair["variables"].items():
            a = np.asarray(per["up"][name], np.float64).ravel()
            b = np.asarray(per["down"][name], np.float64).ravel()
            assert cos == pytest.approx(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), abs=1e-5)
        trunk = next(n for n in pair["variables"] if n.endswith("trunk/kernel"))
        assert pair["variables"][trunk] < -0.5
    assert run.timeline["findings"] == []


def _mixed_model(seed: int) -> Any:
    """Dropout, batch norm, an L2 regularizer and two outputs: every source of hidden state."""
    import keras

    keras.utils.set_random_seed(seed)
    inputs = keras.Input((8,))
    h = keras.layers.Dense(16, activation="relu", kernel_regularizer="l2")(inputs)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.Dropout(0.3)(h)
    model = keras.Model(
        inputs, [keras.layers.Dense(1, name="a")(h), keras.layers.Dense(1, name="b")(h)]
    )
    model.compile(keras.optimizers.Adam(1e-2), loss=["mse", "mae"], loss_weights=[1.0, 0.5])
    return model


def test_monitor_leaves_the_training_result_and_the_model_as_they_were() -> None:
    from gradscope.keras import Monitor

    x, y = scenarios.data()
    results = []
    for monitor in (None, Monitor(every=3)):
        model = _mixed_model(seed=5)
        model.fit(
            x, [y, -y], batch_size=32, epochs=1, verbose=0, callbacks=[monitor] if monitor else []
        )
        results.append([w.numpy() for w in model.weights])  # batch-norm statistics included
    assert monitor is not None and [s["step"] for s in monitor.steps] == [1, 3, 6]
    assert set(monitor.steps[0]["losses"]) == {"a", "b", "added_losses"}
    for plain, watched in zip(*results, strict=True):
        np.testing.assert_array_equal(plain, watched)
    assert "train_step" not in vars(model) and "apply" not in vars(model.optimizer)
    model.fit(x, [y, -y], batch_size=32, epochs=1, verbose=0)  # traced again, without the hooks
    assert len(monitor.steps) == 3


@pytest.mark.filterwarnings("ignore:Gradients do not exist")  # the spare variable, on purpose
def test_monitor_watches_a_custom_train_step() -> None:
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    class Custom(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.dense = keras.layers.Dense(1, name="dense")
            self.spare = self.add_weight(shape=(3,), name="spare")  # no loss reaches it

        def call(self, x: Any) -> Any:
            return self.dense(x)

        def train_step(self, data: Any) -> Any:
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(y - self(x, training=True)))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
            return {"loss": loss}

    keras.utils.set_random_seed(6)
    x, y = scenarios.data(n=64)
    model = Custom()
    model.compile(keras.optimizers.SGD(0.05))
    model(x[:1])
    kernel = model.dense.kernel
    before = kernel.numpy(), model.dense.bias.numpy()
    monitor = Monitor(every=2)
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[monitor])
    first, record = monitor.steps
    assert (first["step"], record["step"]) == (1, 2)
    spare = record["variables"][model.spare.path]
    # Bare TF: no gradient for a weight the loss never reads; the traced step says why.
    with tf.GradientTape() as tape:
        unused = tf.reduce_mean(tf.square(y - model(x, training=True)))
    assert tape.gradient(unused, model.spare) is None
    assert spare["status"] == "none:disconnected" and spare["norm"] is None
    # Bare TF: step 2's gradient, from the weights after one SGD step on the first batch.
    w, b = tf.Variable(before[0]), tf.Variable(before[1])
    for batch in (slice(0, 32), slice(32, 64)):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y[batch] - (x[batch] @ w + b)))
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(0.05 * gw)
        b.assign_sub(0.05 * gb)
    assert record["variables"][kernel.path]["norm"] == pytest.approx(_norm(gw), rel=1e-5)
    assert record["loss"] == pytest.approx(float(loss), rel=1e-5)
    (finding,) = monitor.findings
    assert (finding["kind"], finding["variable"], finding["from_step"]) == (
        "none",
        model.spare.path,
        1,  # from the first step on
    )


@pytest.mark.parametrize(
    ("compile_options", "steps"),
    [
        ({"run_eagerly": True}, [1, 2, 4, 6, 8]),
        pytest.param({"jit_compile": True}, [1, 2, 4, 6, 8], marks=pytest.mark.slow),  # XLA
        # Three steps per execution: each due step of an execution has its own record.
        ({"steps_per_execution": 3}, [1, 2, 4, 6, 8]),
    ],
)
def test_monitor_in_every_execution_mode(compile_options: dict[str, Any], steps: list[int]) -> None:
    import keras

    from gradscope.keras import Monitor

    x, y = scenarios.data()
    weights = []
    monitor = Monitor(every=2)
    for callbacks in ([], [monitor]):
        keras.utils.set_random_seed(7)
        inputs = keras.Input((8,))
        h = keras.layers.Dense(16, activation="relu")(inputs)
        model = keras.Model(
            inputs, [keras.layers.Dense(1, name="a")(h), keras.layers.Dense(1, name="b")(h)]
        )
        model.compile("sgd", loss=["mse", "mse"], **compile_options)
        model.fit(x, [y, -y], batch_size=32, epochs=1, verbose=0, callbacks=callbacks)
        weights.append([w.numpy() for w in model.weights])
    assert [s["step"] for s in monitor.steps] == steps
    assert all(set(s["losses"]) == {"a", "b"} for s in monitor.steps)
    for plain, watched in zip(*weights, strict=True):
        np.testing.assert_array_equal(plain, watched)


def test_one_monitor_over_several_fits_records_them_all(tmp_path: Any) -> None:
    import json

    import keras

    from gradscope.keras import Monitor

    x, y = scenarios.data(n=128)
    weights = []
    path = tmp_path / "timeline.json"
    monitor = Monitor(every=2, timeline=path)
    for callbacks in ([], [monitor]):
        keras.utils.set_random_seed(9)
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="relu"),
                                  keras.layers.Dense(1)])  # fmt: skip
        model.compile(keras.optimizers.Adam(1e-2), loss="mse")
        for _ in range(2):  # an epoch at a time, as many training loops do
            model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0,
                      callbacks=callbacks)  # fmt: skip
        weights.append([w.numpy() for w in model.weights])
    assert [s["step"] for s in monitor.steps] == [1, 2, 4, 6, 8]  # the second fit: from 5
    assert [s["step"] for s in json.loads(path.read_text())["steps"]] == [1, 2, 4, 6, 8]
    for plain, watched in zip(*weights, strict=True):
        np.testing.assert_array_equal(plain, watched)


@pytest.mark.replicas
def test_monitor_under_mirrored_strategy_records_the_all_reduced_gradients() -> None:
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    x, y = scenarios.data(n=128)

    def build() -> Any:
        keras.utils.set_random_seed(10)
        model = keras.Sequential(name="net", layers=[
            keras.Input((8,)), keras.layers.Dense(4, activation="relu", name="h"),
            keras.layers.Dense(1, name="o")])  # fmt: skip
        model.compile(keras.optimizers.SGD(0.01), loss="mse")
        return model

    one, two = Monitor(every=2), Monitor(every=2)
    build().fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[one])
    # NOTE: no collective ops: gradscope's own --strategy tests hold a MirroredStrategy in this
    # process, and two strategies' collective instance keys collide (TensorFlow aborts every
    # later collective). Keras all-reduces the gradients through the strategy either way.
    strategy = tf.distribute.MirroredStrategy(
        ["/cpu:0", "/cpu:1"], cross_device_ops=tf.distribute.ReductionToOneDevice()
    )
    with strategy.scope():
        model = build()
    model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0, callbacks=[two])
    assert [s["step"] for s in two.steps] == [s["step"] for s in one.steps] == [1, 2, 4]
    for single, mirrored in zip(one.steps, two.steps, strict=True):
        assert mirrored["loss"] == pytest.approx(single["loss"], rel=1e-5)
        assert set(mirrored["variables"]) == set(single["variables"])
        for name, v in single["variables"].items():
            w = mirrored["variables"][name]
            assert w["status"] == v["status"] == "ok"
            assert w["norm"] == pytest.approx(v["norm"], rel=1e-5), name
            assert w["weight_norm"] == pytest.approx(v["weight_norm"], rel=1e-5), name
    # Bare TF, one device: step 2's gradient from the weights after step 1.
    ref = build()
    ref.fit(x[:32], y[:32], batch_size=32, epochs=1, shuffle=False, verbose=0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y[32:64] - ref(x[32:64], training=True)))
    grads = tape.gradient(loss, ref.trainable_variables)
    for variable, grad in zip(ref.trainable_variables, grads, strict=True):
        norm = two.steps[1]["variables"][variable.path]["norm"]
        assert norm == pytest.approx(_norm(grad), rel=1e-5), variable.path


def test_monitor_mixed_precision_overflows_the_loss_scale_skips_are_no_nan_finding() -> None:
    """Mixed precision: at Keras' initial loss scale the float16 gradients overflow; its
    LossScaleOptimizer skips those steps (bare TensorFlow: fewer optimizer iterations than
    batches, every weight finite) and training goes on. The Monitor marks the records of
    skipped steps and reports no ``nan`` finding for them, and the weights stay bit-identical."""
    import keras

    from gradscope.keras import Monitor

    rng = np.random.default_rng(3)
    x = rng.normal(size=(240, 6)).astype("float32")
    y = (x @ rng.normal(size=(6, 2))).astype("float32") * 30.0
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        results = []
        monitor = Monitor(every=1)
        for callbacks in ([], [monitor]):
            keras.utils.set_random_seed(0)
            inputs = keras.Input((6,))
            hidden = keras.layers.Dense(8, activation="relu", name="base")(inputs)
            out = keras.layers.Dense(2, name="head", dtype="float32")(hidden)
            model = keras.Model(inputs, out)
            model.compile(keras.optimizers.SGD(1e-3, momentum=0.9), "mse", steps_per_execution=3)
            model.fit(x, y, batch_size=6, verbose=0, callbacks=callbacks)
            results.append((int(model.optimizer.iterations.numpy()), model.get_weights()))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    (iterations, plain), (_, watched) = results
    assert iterations < 40  # bare TensorFlow: the loss scale skipped steps
    assert all(np.isfinite(w).all() for w in plain)
    for a, b in zip(plain, watched, strict=True):
        np.testing.assert_array_equal(a, b)
    nan = [s for s in monitor.steps if any(v["status"] == "nan" for v in s["variables"].values())]
    assert nan and all(s.get("skipped") is True for s in nan)
    assert [s["step"] for s in monitor.steps] == list(range(1, 41))  # skipped steps counted
    assert monitor.findings == []  # a healthy fit


def test_monitor_mixed_precision_real_nan_every_step_skipped_is_a_finding() -> None:
    """A real NaN under mixed precision: the gradient of sqrt at 0 is infinite at every loss
    scale, so the LossScaleOptimizer skips every step (bare TensorFlow: optimizer.iterations
    stays 0, the weights never move) - training silently does nothing. The Monitor counts the
    steps itself (not by optimizer.iterations, which skipped steps do not advance), records
    each one, and reports nan from step 1."""
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    def loss(t: Any, p: Any) -> Any:
        return tf.reduce_mean(tf.sqrt(tf.abs(p - p))) + tf.reduce_mean((t - p) ** 2)

    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 6)).astype("float32")
    y = (x @ rng.normal(size=(6, 2))).astype("float32")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(0)
        inputs = keras.Input((6,))
        hidden = keras.layers.Dense(8, activation="relu", name="base")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(2, name="head", dtype="float32")(hidden))
        model.compile(keras.optimizers.SGD(0.01), loss)
        before = model.get_weights()
        monitor = Monitor(every=1)
        model.fit(x, y, batch_size=6, verbose=0, callbacks=[monitor])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert int(model.optimizer.iterations.numpy()) == 0  # bare TF: every step skipped
    for a, b in zip(before, model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert [s["step"] for s in monitor.steps] == [1, 2, 3, 4, 5]
    assert all(s.get("skipped") is True for s in monitor.steps)
    nan = [f for f in monitor.findings if f["kind"] == "nan"]
    assert {f["variable"] for f in nan} == {v.path for v in model.trainable_variables}
    assert all(f["from_step"] == 1 and "no later recorded step" in f["message"] for f in nan)


def test_monitor_names_the_unread_output_of_a_custom_train_step() -> None:
    """A custom ``train_step`` that never calls ``compute_loss`` reads one head of two: the
    Monitor names the output no loss reads, as ``gradscope run`` does for the same step, not
    only where the last path ends. Reference: bare TensorFlow's None gradients."""
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    class TwoHead(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.body = keras.layers.Dense(8, activation="relu", name="body")
            self.head_a = keras.layers.Dense(1, name="head_a")
            self.head_b = keras.layers.Dense(1, name="head_b")

        def call(self, x: Any) -> Any:
            h = self.body(x)
            return self.head_a(h), self.head_b(h)

        def train_step(self, data: Any) -> Any:
            x, y = data
            with tf.GradientTape() as tape:
                a, _ = self(x, training=True)
                loss = tf.reduce_mean((a - y) ** 2)  # head_b has no loss
            grads = tape.gradient(loss, self.trainable_variables)
            pairs = [
                (g, v)
                for g, v in zip(grads, self.trainable_variables, strict=True)
                if g is not None
            ]
            self.optimizer.apply_gradients(pairs)
            return {"loss": loss}

    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 1)).astype("float32")
    model = TwoHead()
    model.compile(optimizer="sgd")
    model(x[:2])
    with tf.GradientTape() as tape:
        a, _ = model(x[:8], training=True)
        loss = tf.reduce_mean((a - y[:8]) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    none = {v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None}
    assert none == {"two_head/head_b/kernel", "two_head/head_b/bias"}
    monitor = Monitor(every=1)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[monitor])
    found = {f["variable"]: f for f in monitor.findings}
    assert set(found) == none and {f["kind"] for f in found.values()} == {"none"}
    for f in found.values():
        assert "reaches only output 'output 1' of model 'two_head'" in f["message"]
    assert "__call__" not in vars(TwoHead)  # the class is as it was
