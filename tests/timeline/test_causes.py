"""The Monitor's causes for a None gradient, on a real model, against bare TensorFlow's None.

One model, trained once: a head compiled with no loss (``loss=["mse", None]``) and a side
branch behind a ``tf.stop_gradient`` in a layer's ``call``.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.timeline import scenarios

pytestmark = pytest.mark.tf


def _frozen_layer() -> Any:
    import keras
    import tensorflow as tf

    class Frozen(keras.layers.Layer):  # type: ignore[misc]
        def call(self, x: Any) -> Any:
            return tf.stop_gradient(x)

    return Frozen


@pytest.fixture(scope="module")
def trained() -> dict[str, Any]:
    import keras

    from gradscope.keras import Monitor

    keras.utils.set_random_seed(8)
    frozen = _frozen_layer()
    inputs = keras.Input((8,))
    trunk = keras.layers.Dense(16, activation="relu", name="trunk")(inputs)
    side = frozen(name="freeze")(keras.layers.Dense(16, name="side")(inputs))
    a = keras.layers.Dense(1, name="a")(keras.layers.Add()([trunk, side]))
    b = keras.layers.Dense(1, name="b")(trunk)
    model = keras.Model(inputs, [a, b])
    model.compile("sgd", loss=["mse", None])  # head b: no loss
    x, y = scenarios.data(n=64)
    monitor = Monitor(every=1)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        model.fit(x, [y, y], batch_size=32, epochs=1, verbose=0, callbacks=[monitor])
    return {"model": model, "x": x, "y": y, "monitor": monitor, "frozen": frozen}


def _bare_nones(model: Any, x: Any, y: Any) -> set[str]:
    """The variables bare TensorFlow gives no gradient for the compiled loss (head a's mse)."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        a, _ = model(x, training=True)
        loss = tf.reduce_mean(tf.square(y - a))
    grads = tape.gradient(loss, model.trainable_variables)
    return {v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None}


def test_none_statuses_are_where_bare_tensorflow_gives_none(trained: dict[str, Any]) -> None:
    nones = _bare_nones(trained["model"], trained["x"], trained["y"])
    assert nones == {"side/kernel", "side/bias", "b/kernel", "b/bias"}
    for record in trained["monitor"].steps:
        statuses = {n: v["status"] for n, v in record["variables"].items()}
        assert {n for n, s in statuses.items() if s.startswith("none:")} == nones
        assert "none:unexplained" not in statuses.values()


def _line_of(text: str) -> int:
    """The line of this file holding ``text``."""
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_a_head_with_no_loss_is_named(trained: dict[str, Any]) -> None:
    """The cause ``gradscope run`` gives the same ``fit`` (one analysis of the step's tape):
    the output no loss reads. Its last path ends in an op Keras made, whose line is the
    user's ``fit`` line, the step's own: said, it would add nothing."""
    (record, *_) = trained["monitor"].steps
    for name in ("b/kernel", "b/bias"):
        v = record["variables"][name]
        assert v["status"] == "none:disconnected" and v["norm"] is None
        assert (
            v["cause"]
            == "reaches only output 'b', which no loss reads (compile() gives it no loss)"
        )


def test_a_stop_gradient_is_the_cut_at_the_users_line(trained: dict[str, Any]) -> None:
    lines, start = inspect.getsourcelines(trained["frozen"].call)
    line = start + next(i for i, text in enumerate(lines) if "tf.stop_gradient(" in text)
    (record, *_) = trained["monitor"].steps
    for name in ("side/kernel", "side/bias"):
        v = record["variables"][name]
        assert v["status"] == "none:stopped"
        assert v["cause"].startswith("cut at ") and "(StopGradient)" in v["cause"]
        assert v["cause"].endswith(f"{os.path.relpath(__file__)}:{line}")
        (cut,) = v["cut_points"]
        assert (cut["op"], cut["kind"]) == ("StopGradient", "stopped")
        assert cut["source"] == f"{os.path.relpath(__file__)}:{line}"


def test_the_none_finding_carries_the_cause(trained: dict[str, Any]) -> None:
    findings = {f.variable: f for f in trained["monitor"].findings if f.kind == "none"}
    assert set(findings) == {"side/kernel", "side/bias", "b/kernel", "b/bias"}
    assert all(f.step == 1 for f in findings.values())
    assert "which no loss reads" in findings["b/kernel"].message
    assert "none:stopped, cut at" in findings["side/bias"].message
    assert findings["side/bias"].cut_points[0].op == "StopGradient"
    assert findings["b/bias"].cut_points == ()  # no path at all: nothing was cut


def _added_losses_model(**compile_options: Any) -> Any:
    """Two heads with losses, a third with none; an L2 regularizer on the trunk's kernel and
    an ``add_loss`` term that reads the trunk through a ``stop_gradient``."""
    import keras
    import tensorflow as tf

    class Penalty(keras.layers.Layer):  # type: ignore[misc]
        def call(self, t: Any) -> Any:
            self.add_loss(0.5 * tf.reduce_mean(tf.square(tf.stop_gradient(t))))
            return t

    keras.utils.set_random_seed(0)
    inputs = keras.Input((8,))
    h = keras.layers.Dense(6, activation="tanh", name="body", kernel_regularizer="l2")(inputs)
    o1, o2 = keras.layers.Dense(1, name="o1")(h), keras.layers.Dense(1, name="o2")(h)
    o3 = keras.layers.Dense(1, name="unused_head")(Penalty(name="penalty")(h))
    model = keras.Model(inputs, [o1, o2, o3])
    model.compile(keras.optimizers.SGD(0.01), ["mse", "mse", None],
                  loss_weights=[1.0, 2.0, None], **compile_options)  # fmt: skip
    return model, Penalty


@pytest.mark.parametrize("compile_options", [{}, {"run_eagerly": True}], ids=["traced", "eager"])
def test_a_variable_no_added_loss_reaches_gets_its_cause(compile_options: dict[str, Any]) -> None:
    import tensorflow as tf

    from gradscope.keras import Monitor

    model, penalty = _added_losses_model(**compile_options)
    plain, _ = _added_losses_model(**compile_options)
    x, y = scenarios.data(n=16)
    with tf.GradientTape() as tape:  # bare TensorFlow: the added losses' gradients
        model(x, training=True)
        added = tf.add_n(model.losses)
    grads = tape.gradient(added, model.trainable_variables)
    nones = {v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None}
    assert nones == {"body/bias", "o1/kernel", "o1/bias", "o2/kernel", "o2/bias",
                     "unused_head/kernel", "unused_head/bias"}  # fmt: skip
    monitor = Monitor(every=1)
    with pytest.warns(UserWarning, match="Gradients do not exist"):
        model.fit(x, [y, y, y], batch_size=8, epochs=1, verbose=0, shuffle=False,
                  callbacks=[monitor])  # fmt: skip
        plain.fit(x, [y, y, y], batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(plain.weights, model.weights, strict=True):  # the extra trace never ran
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    record = monitor.steps[0]
    head = record["variables"]["unused_head/kernel"]  # and the total's None, with its cause
    assert head["status"] == "none:disconnected"
    assert head["cause"].startswith("reaches only output 'unused_head', which no loss reads")
    part = record["losses"]["added_losses"]["variables"]
    assert {n for n, v in part.items() if v["status"].startswith("none:")} == nones
    for name in nones - {"body/bias"}:  # no term reads it at all
        assert part[name]["status"] == "none:disconnected", name
        assert part[name]["cause"] == "no regularizer or add_loss term depends on it", name
    lines, start = inspect.getsourcelines(penalty.call)  # the add_loss term's cut
    line = start + next(i for i, text in enumerate(lines) if "tf.stop_gradient(" in text)
    bias = part["body/bias"]
    assert bias["status"] == "none:stopped"
    assert bias["cause"].endswith(f"(StopGradient) at {os.path.relpath(__file__)}:{line}")
