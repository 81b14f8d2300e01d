"""The Monitor's hooks where Keras hands them something other than plain gradients of one loss:
weighted losses and regularizers (per-loss gradients), mixed precision (scaled gradients), no
trainable weights, and a ``fit`` that raised. Every number against bare TensorFlow."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import Processes

pytestmark = pytest.mark.tf

X = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
Y1 = np.random.default_rng(1).normal(size=(16, 1)).astype("float32")
Y2 = np.random.default_rng(2).normal(size=(16, 1)).astype("float32")


def _two_heads(**compile_options: Any) -> Any:
    """Two outputs weighted 1 and 0.5, an L2 regularizer on the shared layer."""
    import keras

    keras.utils.set_random_seed(1)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(3, activation="tanh", kernel_regularizer="l2", name="trunk")(inputs)
    a, b = keras.layers.Dense(1, name="a")(hidden), keras.layers.Dense(1, name="b")(hidden)
    model = keras.Model(inputs, [a, b])
    model.compile(
        keras.optimizers.SGD(0.05), ["mse", "mse"], loss_weights=[1.0, 0.5], **compile_options
    )
    return model


def _norm(g: Any) -> float | None:
    return None if g is None else float(np.linalg.norm(np.asarray(g, np.float64)))


@pytest.mark.parametrize("compile_options", [{}, {"run_eagerly": True}], ids=["traced", "eager"])
def test_weighted_losses_and_regularizers_get_their_own_gradients(
    tmp_path: Path, compile_options: dict[str, Any]
) -> None:
    import tensorflow as tf

    from gradscope.keras import Monitor

    model = _two_heads(**compile_options)
    start = [v.numpy() for v in model.trainable_variables]
    monitor = Monitor(every=1, timeline=tmp_path / "t.json")
    model.fit(X, (Y1, Y2), batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=[monitor])
    (record,) = json.loads((tmp_path / "t.json").read_text())["steps"]

    bare = _two_heads()
    for variable, value in zip(bare.trainable_variables, start, strict=True):
        variable.assign(value)
    with tf.GradientTape(persistent=True) as tape:
        a, b = bare(X, training=True)
        parts = {
            "a": tf.reduce_mean(tf.square(Y1 - a)),
            "b": 0.5 * tf.reduce_mean(tf.square(Y2 - b)),
            "added_losses": tf.add_n(bare.losses),
        }
    names = [v.path for v in bare.trainable_variables]
    assert set(record["losses"]) == set(parts)
    for part, value in parts.items():
        grads = tape.gradient(value, bare.trainable_variables)
        stats = record["losses"][part]
        assert stats["value"] == pytest.approx(float(value), rel=1e-5)
        for name, grad in zip(names, grads, strict=True):
            got = stats["variables"][name]
            expected = _norm(grad)
            if expected is None:  # eagerly too: the step is traced once for the causes
                assert got["status"] == "none:disconnected", (part, name)
                if part == "added_losses":  # the L2 term is on trunk/kernel only
                    assert got["cause"] == "no regularizer or add_loss term depends on it"
                else:
                    head = "a" if name.startswith("a/") else "b"
                    said = f"reaches only output '{head}', which loss '{part}' does not read"
                    assert got["cause"] == said, (part, name)
            else:
                assert got["status"] == "ok", (part, name)
                assert got["norm"] == pytest.approx(expected, rel=1e-5), (part, name)
    (pair,) = [c for c in record["cosine"] if c["losses"] == ["a", "b"]]
    ga, gb = (tape.gradient(parts[k], bare.trainable_variables) for k in ("a", "b"))
    trunk = names.index("trunk/kernel")
    u, v = (np.asarray(g[trunk], np.float64).ravel() for g in (ga, gb))
    cosine = float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))
    assert pair["variables"]["trunk/kernel"] == pytest.approx(cosine, abs=1e-5)


def test_mixed_precision_records_the_unscaled_gradients(tmp_path: Path) -> None:
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    keras.mixed_precision.set_global_policy("mixed_float16")
    try:

        def build() -> Any:
            keras.utils.set_random_seed(3)
            model = keras.Sequential(
                [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)]
            )
            model.compile(keras.optimizers.SGD(0.01), "mse")  # wrapped in a LossScaleOptimizer
            return model

        model = build()
        start = [v.numpy() for v in model.trainable_variables]
        monitor = Monitor(every=1, timeline=tmp_path / "t.json")
        model.fit(X, Y1, batch_size=16, epochs=1, shuffle=False, verbose=0, callbacks=[monitor])
        bare = build()
        for variable, value in zip(bare.trainable_variables, start, strict=True):
            variable.assign(value)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(Y1 - tf.cast(bare(X, training=True), tf.float32)))
        grads = tape.gradient(loss, bare.trainable_variables)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert type(model.optimizer).__name__ == "LossScaleOptimizer"
    (record,) = monitor.steps
    for variable, grad in zip(model.trainable_variables, grads, strict=True):
        got = record["variables"][variable.path]["norm"]
        assert got == pytest.approx(_norm(grad), rel=1e-3)  # float16 arithmetic; scale 2**15


def test_a_model_without_trainable_weights_trains_and_records_nothing(tmp_path: Path) -> None:
    import keras

    from gradscope.keras import Monitor

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.layers[0].trainable = False
    model.compile("sgd", "mse")
    monitor = Monitor(every=1, timeline=tmp_path / "t.json")
    with pytest.warns(UserWarning) as caught:
        model.fit(X, Y1, batch_size=8, verbose=0, callbacks=[monitor])
    said = " ".join(str(w.message) for w in caught)
    assert "does not have any trainable weights" in said  # Keras
    assert "Monitor recorded no gradient" in said
    assert monitor.steps == [] and monitor.findings == []
    assert json.loads((tmp_path / "t.json").read_text())["steps"] == []


def test_a_fit_that_raised_leaves_keras_own_train_function_for_the_next() -> None:
    import keras

    from gradscope.keras import Monitor

    class Stop(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 1:
                raise RuntimeError("stopped by the user")

    def build() -> Any:
        keras.utils.set_random_seed(4)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.1), "mse")
        return model

    model, reference = build(), build()
    with pytest.raises(RuntimeError, match="stopped by the user"):
        model.fit(
            X, Y1, batch_size=4, shuffle=False, verbose=0, callbacks=[Monitor(every=1), Stop()]
        )
    assert "train_step" in vars(model)  # on_train_end never ran: the hooks are still there
    reference.fit(X[:8], Y1[:8], batch_size=4, shuffle=False, verbose=0)  # the 2 steps taken
    model.fit(X, Y1, batch_size=4, shuffle=False, verbose=0)
    reference.fit(X, Y1, batch_size=4, shuffle=False, verbose=0)
    assert "train_step" not in vars(model) and "apply" not in vars(model.optimizer)
    for got, expected in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, expected)


def test_a_step_that_applies_another_optimizer_is_said_to_record_nothing() -> None:
    """The Keras DCGAN pattern: ``super().compile()`` leaves ``model.optimizer`` unused."""
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    class Pair(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.net = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
            self.own = keras.optimizers.SGD(0.1)

        def call(self, x: Any) -> Any:
            return self.net(x)

        def train_step(self, data: Any) -> Any:
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(y - self.net(x)))
            grads = tape.gradient(loss, self.net.trainable_variables)
            self.own.apply_gradients(zip(grads, self.net.trainable_variables, strict=True))
            return {"loss": loss}

    model = Pair()
    model.compile()
    monitor = Monitor(every=2)
    with pytest.warns(UserWarning, match="recorded no gradient: model.optimizer applied none"):
        model.fit(X, Y1, batch_size=4, verbose=0, callbacks=[monitor])
    assert monitor.steps == [] and int(model.own.iterations) == 4


def test_two_monitors_on_one_model_in_one_fit_are_refused() -> None:
    import keras

    from gradscope.keras import Monitor

    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    first = Monitor(every=1)
    with pytest.raises(ValueError, match="already has a Monitor in this fit"):
        model.fit(X, Y1, batch_size=4, verbose=0, callbacks=[first, Monitor(every=2)])
    assert "train_step" not in vars(model) and "apply" not in vars(model.optimizer)
    with pytest.raises(ValueError, match="already has a Monitor in this fit"):
        model.fit(X, Y1, batch_size=4, verbose=0, callbacks=[first, first])  # listed twice
    again = Monitor(every=2)
    model.fit(X, Y1, batch_size=4, verbose=0, callbacks=[again])  # one Monitor: fine
    assert [r["step"] for r in again.steps] == [1, 2, 4]
    model.fit(X, Y1, batch_size=4, verbose=0, callbacks=[first])  # the first, reused: fine
    assert [r["step"] for r in first.steps] == [5, 6, 7, 8]
    model.fit(X, Y1, batch_size=4, verbose=0)  # and Keras' own step after them
    assert "train_step" not in vars(model) and "apply" not in vars(model.optimizer)
    assert "_gradscope_monitor" not in vars(model)


def test_a_monitor_whose_fit_raised_can_be_used_again_here_or_on_another_model() -> None:
    import keras

    from gradscope.keras import Monitor

    class Stop(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 1:
                raise RuntimeError("stopped by the user")

    def build(seed: int) -> Any:
        keras.utils.set_random_seed(seed)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.SGD(0.1), "mse")
        return model

    def fit(model: Any, callbacks: list[Any]) -> None:
        model.fit(X, Y1, batch_size=4, shuffle=False, verbose=0, callbacks=callbacks)

    a, b, a_ref, b_ref = build(6), build(7), build(6), build(7)
    monitor = Monitor(every=1)
    with pytest.raises(RuntimeError, match="stopped by the user"):
        fit(a, [monitor, Stop()])
    a_ref.fit(X[:8], Y1[:8], batch_size=4, shuffle=False, verbose=0)
    fit(b, [monitor])  # the same Monitor, on another model
    fit(b_ref, [])
    # step 2 ran before the callback raised: its record, made on the device, is read when
    # the next fit begins (it was lost: [1, 1, 2, 3, 4])
    assert [r["step"] for r in monitor.steps] == [1, 2, 1, 2, 3, 4]
    for model, reference in ((a, a_ref), (b, b_ref)):
        fit(model, [])  # Keras' own step, on each: a trains a, b trains b
        fit(reference, [])
        for got, expected in zip(model.get_weights(), reference.get_weights(), strict=True):
            np.testing.assert_array_equal(got, expected)
        assert "train_step" not in vars(model) and "_gradscope_monitor" not in vars(model)
        model.train_on_batch(X[:4], Y1[:4])  # no recursion into a Monitor's function


def test_an_interrupted_fit_writes_its_timeline_when_the_program_exits(
    python_processes: Processes, tmp_path: Path
) -> None:
    """The program is a process of its own (forked from one that imported TensorFlow): the
    timeline is written by its exit's atexit handlers."""
    path = tmp_path / "timeline.json"
    script = f"""
import numpy as np, keras
from gradscope.keras import Monitor

class Interrupt(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 2:
            raise KeyboardInterrupt  # Ctrl-C during the third step's callbacks

keras.utils.set_random_seed(8)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(keras.optimizers.SGD(0.1), "mse")
x = np.ones((16, 4), "float32")
model.fit(x, x[:, :1], batch_size=4, verbose=0,
          callbacks=[Monitor(every=1, timeline={str(path)!r}), Interrupt()])
"""
    done = python_processes(["-c", script], tmp_path, os.environ, kill_after=120)
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr
    timeline = json.loads(path.read_text())
    # step 3 ran before Ctrl-C: its record is read at exit (it was lost: [1, 2])
    assert [r["step"] for r in timeline["steps"]] == [1, 2, 3]
