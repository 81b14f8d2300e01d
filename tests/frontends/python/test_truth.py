"""What only Python code gets wrong (issue 15, classes 5-9), against bare TensorFlow."""

from __future__ import annotations

import json
from types import ModuleType

import keras
import pytest
import tensorflow as tf
from click.testing import CliRunner

import gradscope
from gradscope._src.cli import main
from gradscope._src.errors import TargetError
from gradscope._src.results import report as m
from tests.frontends.python import bare
from tests.frontends.python.bare import DATA, line_of, load_file
from tests.frontends.python.truth import agrees

pytestmark = pytest.mark.tf

FILE = DATA / "truth" / "python_only.py"


@pytest.fixture(scope="module")
def cases() -> ModuleType:
    return load_file(FILE)


def test_keras_targets_train_as_fit_does(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.compiled)
    model = cases.batchnorm_model()
    mse = keras.losses.MeanSquaredError()

    def output() -> tf.Tensor:
        return mse(cases.Y, model(cases.X, training=True))

    def total() -> tf.Tensor:
        return mse(cases.Y, model(cases.X, training=True)) + tf.add_n(model.losses)

    assert [loss.name for loss in report.losses] == ["out", "total"]
    agrees(report, {"out": output, "total": total}, model.trainable_variables)
    value, _ = bare.tape(output, model.trainable_variables)
    assert report.loss("out").value == pytest.approx(value, rel=1e-5)
    inference = float(mse(cases.Y, model(cases.X, training=False)))
    assert abs(inference - value) > 1e-3  # the model really behaves differently in training
    regularized, _ = bare.tape(total, model.trainable_variables)
    assert report.loss("total").value == pytest.approx(regularized, rel=1e-5)
    assert regularized > value


def test_variable_returned_as_the_loss_agrees_eagerly(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.variable_loss)
    fresh = cases.variable_loss()
    agrees(report, fresh["losses"], fresh["variables"])
    assert report.loss("direct").pair("w").status == m.OK
    assert report.loss("direct").notes == ()  # eager TensorFlow gives a gradient too


def test_user_print_never_reaches_stdout(cases: ModuleType) -> None:
    result = CliRunner().invoke(main, ["inspect", f"{FILE}:chatty", "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["losses"]["chatty"]["variables"]["w"]["status"] == "ok"
    assert "computing the loss" in result.stderr


def test_op_without_gradient_names_loss_line_and_op(cases: ModuleType) -> None:
    with pytest.raises(LookupError):  # bare TensorFlow refuses too
        w = cases.no_gradient_op()["variables"][0]
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.image.adjust_contrast(w, 2.0))
        tape.gradient(y, w)
    with pytest.raises(TargetError) as caught:
        gradscope.inspect(cases.no_gradient_op)
    message = str(caught.value)
    assert f"python_only.py:{line_of(FILE, '# no gradient here')}" in message
    assert "loss 'contrast'" in message
    assert "AdjustContrastv2" in message
    assert message.rstrip().endswith("differentiable op)")  # whole, not cut mid-sentence


def test_two_functional_models_are_told_apart(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.two_networks)
    names = [v.name for v in report.variables]
    assert "generator/hidden/kernel" in names and "critic/hidden/kernel" in names
    assert len(set(names)) == len(names)


def test_untracked_raw_variable_is_flagged(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.untracked)
    assert report.loss("mse").pair("scale").status == m.OK
    assert any("`scale`" in n and "no Keras model or layer tracks" in n for n in report.notes)
    assert not any("seq/dense" in n for n in report.notes)


def test_numpy_only_printed_claims_no_cut(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.printed_numpy)
    fresh = cases.printed_numpy()
    agrees(report, fresh["losses"], fresh["variables"], eager=False, traceable=False)
    [note] = report.loss("printed").notes
    assert "converts a tensor to NumPy" in note
    assert "cut outside TensorFlow" not in note


def test_py_function_scalar_is_not_called_non_scalar(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.py_function_loss)
    assert not any("not a scalar" in n for n in report.loss("py").notes)
    assert report.loss("py").value == pytest.approx(7.0)


def test_target_grad_loss_stop_gradients_unconnected(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.fields)
    fresh = cases.fields()
    w, u, spare = fresh["variables"]
    loss = fresh["losses"]["flipped"]
    with tf.GradientTape(persistent=True) as tape:
        y = loss()
    flipped = tape.gradient(y, [w, u, spare], output_gradients=tf.constant(-2.0),
                            unconnected_gradients=tf.UnconnectedGradients.ZERO)  # fmt: skip

    @tf.function
    def stopped() -> list[tf.Tensor]:
        y = loss()
        scaled = y.graph.get_operation_by_name("scaled").outputs[0]
        return tf.gradients(y, [w, u], stop_gradients=[scaled])

    expected = {"w": stopped()[0], "u": None}
    flip = report.loss("flipped")
    for name, grad in zip(["w", "u", "spare"], flipped, strict=True):
        assert flip.pair(name).norm == pytest.approx(float(tf.norm(grad)), rel=1e-5)
    assert flip.pair("spare").status == m.ZERO  # unconnected_gradients="zero", as TensorFlow
    stop = report.loss("stopped")
    assert stop.pair("w").norm == pytest.approx(float(tf.norm(expected["w"])), rel=1e-5)
    assert stop.pair("u").status in (m.ZERO, m.STOPPED)
    assert [c.op for c in stop.pair("u").cut_points] == ["Mul"]
