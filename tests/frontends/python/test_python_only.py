"""Problems only Python code has, and how Python targets name and pick their variables.

Each expectation comes from bare TensorFlow in the test: an eager GradientTape for what an
eager loop sees, ``tf.function`` + ``tf.gradients`` for what a traced step sees.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import gradscope
from gradscope._src.results import report as m
from tests.frontends.python.bare import line_of, tape, traced

pytestmark = pytest.mark.tf

HERE = Path(__file__)
THIS = "tests/frontends/python/test_python_only.py"


def test_traced_and_eager_disagreement_is_reported(in_data: None, loose: ModuleType) -> None:
    report = gradscope.inspect("loose_model.py:python_float")
    target = loose.python_float()
    (w,) = target["variables"]
    assert traced(target["losses"]["loss"], [w])["w"].none is False  # tf.function: a gradient
    assert tape(target["losses"]["loss"], [w])[1]["w"].none is True  # eager: None
    loss = report.loss("loss")
    assert loss.pair("w").status == m.OK  # the traced answer
    (note,) = loss.notes
    assert note.startswith("traced and eager gradients disagree: `w` gets a gradient when traced")


def test_eager_check_can_be_turned_off() -> None:
    w = tf.Variable(3.0, name="w")
    target = {"losses": {"loss": lambda: float(w * 2.0) * tf.ones(())}, "eager_check": False}
    report = gradscope.inspect(target)
    assert report.loss("loss").notes == ()
    assert report.notes == ("eager_check is off: traced and eager gradients were not compared",)


def test_variable_created_on_every_call(in_data: None) -> None:
    report = gradscope.inspect("loose_model.py:fresh_traced_variable")
    created = line_of(Path("loose_model.py"), 'tf.Variable(np.ones((2, 2), "float32")')
    (note,) = report.loss("loss").notes
    assert note.startswith(
        f"creates a new variable on every call (`fresh` at loose_model.py:{created})"
    )
    assert report.loss("loss").pair("fresh").status == m.OK


def test_variable_created_on_every_call_from_a_traced_value(in_data: None) -> None:
    report = gradscope.inspect("loose_model.py:fresh_variable")
    (note,) = report.loss("loss").notes
    created = line_of(Path("loose_model.py"), "tf.Variable(tf.ones((2, 2))")
    assert f"(`fresh` at loose_model.py:{created})" in note
    assert "a traced tf.function refuses that" in note
    assert report.loss("loss").value == pytest.approx(8.0)


def test_non_scalar_loss_is_summed_with_a_note() -> None:
    w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
    fn = lambda: w * 3.0  # noqa: E731
    value, grads = tape(fn, [w])
    report = gradscope.inspect({"losses": {"wide": fn}})
    loss = report.loss("wide")
    assert loss.value == pytest.approx(value)  # bare TF sums the value the same way
    assert loss.pair("w").norm == pytest.approx(grads["w"].norm)
    assert loss.notes == (
        "returns a tensor of shape [2, 2], not a scalar: gradscope sums it, as tf.gradients and "
        "GradientTape.gradient do (the value shown is the sum).",
    )


def test_loss_returning_numpy_is_cut_outside_tensorflow() -> None:
    w = tf.Variable(2.0, name="w")
    fn = lambda: np.float32(3.0)  # noqa: E731
    assert tape(fn, [w])[1]["w"].none
    report = gradscope.inspect({"losses": {"np": fn}, "variables": [w]})
    loss = report.loss("np")
    assert loss.pair("w").status == m.DISCONNECTED
    assert loss.notes[0].startswith("returns a NumPy value (float32), not a tensor")


def test_numpy_arrays_read_by_a_disconnected_loss_are_named() -> None:
    w = tf.Variable([1.0, 2.0], name="w")
    predicted = (w * 2.0).numpy()  # turned into NumPy before the loss ever runs

    def loss() -> tf.Tensor:
        return tf.reduce_sum(tf.constant(predicted) ** 2)

    assert tape(loss, [w])[1]["w"].none
    report = gradscope.inspect({"losses": {"loss": loss}, "variables": [w]})
    assert report.loss("loss").pair("w").status == m.DISCONNECTED
    assert "reads NumPy arrays (`predicted`)" in report.loss("loss").notes[0]


def test_variable_names_clash_gets_a_suffix() -> None:
    a = tf.Variable(1.0, name="w")
    b = tf.Variable(2.0, name="w")
    report = gradscope.inspect({"losses": {"l": lambda: a * b}, "variables": [b, a, b]})
    assert [v.name for v in report.variables] == ["w", "w_1"]  # order kept, repeats dropped
    loss = report.loss("l")
    assert loss.pair("w").norm == pytest.approx(1.0)  # d(ab)/db = a: the first listed is b
    assert loss.pair("w_1").norm == pytest.approx(2.0)


def test_default_variables_are_those_the_losses_touch_even_under_stop_gradient() -> None:
    used = tf.Variable(1.0, name="used")
    stopped = tf.Variable(1.0, name="stopped")
    tf.Variable(1.0, name="unused")
    report = gradscope.inspect({"losses": {"l": lambda: tf.stop_gradient(stopped) * used}})
    where = f"{THIS}:{line_of(HERE, 'lambda: tf.stop_' + 'gradient(stopped)')}"  # not this line
    assert [v.name for v in report.variables] == ["stopped", "used"]  # in the order first read
    assert report.loss("l").pair("stopped").status == m.STOPPED
    (cut,) = report.loss("l").pair("stopped").cut_points
    assert cut.source == where


def test_library_internal_comparison_is_not_listed_as_a_cut(mypkg: ModuleType) -> None:
    model = mypkg.two_heads_model()
    x, _, kind = mypkg.data()
    labels = tf.one_hot(kind, 3)

    def loss() -> tf.Tensor:  # compares logits >= 0 inside, on a path with no gradient
        logits = model(x)[1]
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))

    expected = tape(loss, model.trainable_variables)[1]
    report = gradscope.inspect({"losses": {"ce": loss}, "model": model})
    for name, grad in expected.items():
        pair = report.loss("ce").pair(name)
        assert m.is_none(pair.status) == grad.none
        assert pair.cut_points == (), (name, pair.cut_points)


def test_empty_variables_of_an_unbuilt_model_fall_back_to_those_touched(
    loose: ModuleType,
) -> None:
    net = loose.Net()
    assert net.trainable_variables == []  # a subclassed model builds on its first call
    report = gradscope.inspect(
        {"losses": {"l": lambda: tf.reduce_sum(net(loose.X))}, "variables": net.trainable_variables}
    )
    assert [v.name for v in report.variables] == [v.path for v in net.trainable_variables]
    assert report.notes[0].startswith("'variables' was empty when the target function returned")


def test_frozen_keras_layer_is_reported_frozen(mypkg: ModuleType) -> None:
    def build() -> dict[str, Any]:
        model = mypkg.two_heads_model()
        model.get_layer("price").trainable = False
        x, price, _ = mypkg.data()
        return {
            "losses": {"price": lambda: tf.reduce_mean((model(x)[0] - price) ** 2)},
            "model": model,
        }

    report = gradscope.inspect(build)
    assert report.loss("price").pair("price/kernel").status == m.FROZEN
    assert report.loss("price").pair("body/kernel").status == m.OK
    # the kind head never trains from this loss; the frozen price head is not reported
    assert {(p.kind, p.variable) for p in report.problems} == {
        (m.NEVER_TRAINED, "kind/kernel"), (m.NEVER_TRAINED, "kind/bias")
    }  # fmt: skip
    assert report.spec.endswith("test_frozen_keras_layer_is_reported_frozen.<locals>.build")


def test_python_if_on_a_tensor_is_traced_with_autograph() -> None:
    w = tf.Variable(2.0, name="w")

    def loss() -> tf.Tensor:
        y = w * 1.0
        if y > 0:  # a tensor condition: traced, autograph turns it into a tf.cond
            y = tf.stop_gradient(y)
        return y * 3.0

    assert traced(loss, [w])["w"].zero  # tf.cond's gradient: zeros from the stopped branch
    assert tape(loss, [w])[1]["w"].none  # eagerly, Python took the branch: None
    loss_result = gradscope.inspect({"losses": {"l": loss}}).loss("l")
    assert loss_result.pair("w").status == m.ZERO
    (note,) = loss_result.notes
    assert "`w` gets a gradient when traced but None eagerly" in note


def test_keras_optimizer_state_is_not_inspected(mypkg: ModuleType) -> None:
    model = mypkg.two_heads_model()
    x, _, _ = mypkg.data()
    keras.optimizers.SGD(momentum=0.9).build(model.trainable_variables)  # slot variables
    report = gradscope.inspect(
        {"losses": {"p": lambda: tf.reduce_mean(model(x)[0])}, "model": model}
    )
    assert len(report.variables) == len(model.trainable_variables)


def test_variables_read_after_a_numpy_call_are_not_lost() -> None:
    """The trace stops at `.numpy()`; variables the loss reads after it still get their row."""
    x = tf.constant(np.arange(8, dtype="float32").reshape(4, 2))
    w = tf.Variable(tf.ones((2, 1)), name="w")
    b = tf.Variable(0.5, name="b")

    def loss() -> tf.Tensor:
        err = tf.matmul(x, w).numpy()
        return tf.reduce_mean(tf.constant(err)) + b * b

    value, grads = tape(loss, [w, b])
    report = gradscope.inspect({"losses": {"l": loss}})  # no variables: the ones it reads
    assert [v.name for v in report.variables] == ["w", "b"]
    pairs = report.loss("l")
    assert grads["w"].none and m.is_none(pairs.pair("w").status)
    assert not grads["b"].none and pairs.pair("b").status == m.OK
    assert pairs.pair("b").norm == pytest.approx(grads["b"].norm, rel=1e-6)
    assert pairs.value == pytest.approx(value, rel=1e-6)


def test_variables_read_after_a_per_call_variable_are_not_lost() -> None:
    """A variable created inside the loss stops the trace; the real ones it reads stay."""
    w0 = tf.Variable(tf.ones((2, 2)), name="w0")

    def loss() -> tf.Tensor:
        fresh = tf.Variable(tf.ones((2, 2)) * 2.0, name="fresh")
        return tf.reduce_sum(fresh * w0)

    _, grads = tape(loss, [w0])
    report = gradscope.inspect({"losses": {"l": loss}})
    assert [v.name for v in report.variables] == ["w0"]  # not the per-call `fresh`
    pair = report.loss("l").pair("w0")
    assert pair.status == m.OK
    assert pair.norm == pytest.approx(grads["w0"].norm, rel=1e-6)
    assert "creates a new variable on every call" in report.loss("l").notes[0]


def test_a_path_is_named_where_it_was_first_cut_not_again_inside_the_loss() -> None:
    """GAN discriminator loss: the generator is cut at the user's stop_gradient; the
    comparison inside Keras's cross-entropy further on is not a second cut point."""
    keras.utils.set_random_seed(3)
    generator = keras.Sequential([keras.layers.Dense(4)], name="g")
    discriminator = keras.Sequential([keras.layers.Dense(1)], name="d")
    z = tf.constant(np.random.default_rng(0).normal(size=(8, 2)), tf.float32)
    real = tf.constant(np.random.default_rng(1).normal(size=(8, 4)), tf.float32)
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    generator(z), discriminator(real)

    def d_loss() -> tf.Tensor:
        fake = tf.stop_gradient(generator(z))  # cut here
        return bce(tf.ones((8, 1)), discriminator(real)) + bce(
            tf.zeros((8, 1)), discriminator(fake)
        )

    variables = generator.trainable_variables + discriminator.trainable_variables
    _, grads = tape(d_loss, variables)
    report = gradscope.inspect({"losses": {"d_loss": d_loss}, "variables": variables})
    stop_line = line_of(HERE, "# cut" + " here")
    for v in generator.trainable_variables:
        assert grads[v.path].none
        pair = report.loss("d_loss").pair(v.path)
        assert pair.status == m.STOPPED
        assert [(c.op, c.source) for c in pair.cut_points] == [
            ("StopGradient", f"{THIS}:{stop_line}")
        ]
    for v in discriminator.trainable_variables:
        pair = report.loss("d_loss").pair(v.path)
        assert pair.status == m.OK and pair.cut_points == ()
        assert pair.norm == pytest.approx(grads[v.path].norm, rel=1e-4)


def test_batch_normalization_is_not_partly_cut() -> None:
    """BatchNormalization's moments use a stop_gradient inside Keras: not the user's cut."""
    keras.utils.set_random_seed(4)
    model = keras.Sequential([keras.layers.Dense(3), keras.layers.BatchNormalization()])
    x = tf.constant(np.random.default_rng(2).normal(size=(16, 5)), tf.float32)
    y = tf.constant(np.random.default_rng(3).normal(size=(16, 3)), tf.float32)
    model(x)

    def loss() -> tf.Tensor:
        return tf.reduce_mean(tf.square(model(x, training=True) - y))

    variables = model.trainable_variables
    _, grads = tape(loss, variables)
    report = gradscope.inspect({"losses": {"mse": loss}, "variables": variables})
    kernel = variables[0]
    pair = report.loss("mse").pair(kernel.path)
    assert pair.status == m.OK and pair.cut_points == ()
    assert pair.norm == pytest.approx(grads[kernel.path].norm, rel=1e-4)


def test_a_variable_of_unknown_shape_is_reported_with_its_value_shape() -> None:
    w = tf.Variable(tf.ones([3]), shape=tf.TensorShape(None), name="w")

    def loss() -> tf.Tensor:
        return tf.reduce_sum(w * 2.0)

    _, grads = tape(loss, [w])
    report = gradscope.inspect({"losses": {"l": loss}, "variables": [w]})
    (variable,) = report.variables
    assert variable.shape == (3,)
    pair = report.loss("l").pair("w")
    assert pair.status == m.OK
    assert pair.norm == pytest.approx(grads["w"].norm, rel=1e-6)
