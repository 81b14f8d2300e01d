"""Keras models as Python targets, each checked against bare TensorFlow.

Statuses must agree with what a GradientTape returns (None or not), norms and loss values
with its numbers, and every cut point must name the line of the sample model's own code.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import keras
import pytest
import tensorflow as tf

import gradscope
from gradscope._src.results import report as m
from tests.conftest import RunCli
from tests.frontends.python.bare import DATA, line_of, tape, tapes

pytestmark = pytest.mark.tf

MODELS = DATA / "mypkg" / "models.py"
LOOSE = DATA / "loose_model.py"


def _agrees(report: dict[str, Any], expected: dict[str, tuple[float, dict[str, Any]]]) -> None:
    """Every pair's None-ness and norm, and every loss value, equal bare TensorFlow's."""
    for loss, (value, grads) in expected.items():
        got = report["losses"][loss]
        assert got["value"] == pytest.approx(value, rel=1e-5), loss
        for name, grad in grads.items():
            pair = got["variables"][name]
            assert m.is_none(pair["status"]) == grad.none, (loss, name, pair)
            if not grad.none:
                assert pair["norm"] == pytest.approx(grad.norm, rel=1e-4, abs=1e-7), (loss, name)


def test_functional_two_heads_in_a_package(run_cli: RunCli, mypkg: ModuleType) -> None:
    result = run_cli("inspect", "mypkg.models:two_heads", "--format", "json", cwd=DATA)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    target = mypkg.two_heads()
    _agrees(report, tapes(target["losses"], target["model"].trainable_variables))
    assert report["spec"] == "mypkg.models:two_heads"
    assert report["name"] == "two_heads"
    assert list(report["variables"]) == [
        "body/kernel", "body/bias", "price/kernel", "price/bias", "kind/kernel", "kind/bias"
    ]  # fmt: skip
    argmax = {
        "node": "ArgMax", "op": "ArgMax", "kind": "nondifferentiable",
        "source": f"mypkg/models.py:{line_of(MODELS, 'tf.argmax(logits')}",
    }  # fmt: skip
    agreement = report["losses"]["agreement"]["variables"]
    assert agreement["kind/kernel"]["status"] == "none:nondifferentiable"
    assert agreement["kind/kernel"]["cut_points"] == [argmax]
    assert agreement["body/kernel"]["status"] == "ok"  # partly cut: the user's argmax is listed
    assert agreement["body/kernel"]["cut_points"] == [argmax]
    assert report["losses"]["price"]["variables"]["kind/bias"]["status"] == "none:disconnected"
    assert report["problems"] == []  # the expect block holds
    created = line_of(MODELS, '_dense(1, "price", 2)(body)')
    assert report["variables"]["price/kernel"]["source"] == f"mypkg/models.py:{created}"


def test_subclassed_model_with_a_stop_gradient_layer_in_a_loose_file(
    run_cli: RunCli, loose: ModuleType
) -> None:
    result = run_cli("inspect", "loose_model.py:build", "--format", "json", cwd=DATA)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    target = loose.build()
    tape(target.losses["mse"], [])  # builds the model, as its first call does
    net = target.losses["mse"].__closure__[0].cell_contents
    _agrees(report, {"mse": tape(target.losses["mse"], net.trainable_variables)})
    stopped = {
        "node": "net_1/frozen_input_1/StopGradient", "op": "StopGradient", "kind": "stopped",
        "source": f"loose_model.py:{line_of(LOOSE, 'tf.stop_gradient(x) * self.scale')}",
    }  # fmt: skip
    pairs = report["losses"]["mse"]["variables"]
    assert pairs["net/encoder/kernel"]["status"] == "none:stopped"
    assert [c["source"] for c in pairs["net/encoder/kernel"]["cut_points"]] == [stopped["source"]]
    assert pairs["net/encoder/kernel"]["cut_points"][0]["op"] == "StopGradient"
    assert pairs["net/frozen_input/scale"]["status"] == "ok"
    assert "notes" not in report["losses"]["mse"]  # Keras building on the first call is fine
    unexpected = [p for p in report["problems"] if p["kind"] == "unexpected-none"]
    assert {p["variable"] for p in unexpected} == {"net/encoder/kernel", "net/encoder/bias"}
    # expect points at the glob in build(); the variable itself at the user's line that built
    # the layer (Keras builds a subclassed model's layers lazily, on its first call)
    glob = line_of(LOOSE, '{"connected": ["*"]}')
    assert unexpected[0]["source"] == f"loose_model.py:{glob}"
    built = f"loose_model.py:{line_of(LOOSE, 'tf.square(net(X) - Y)')}"
    assert report["variables"]["net/encoder/kernel"]["source"] == built
    # one variable, one problem (issue 29): no second never-trained problem for them
    assert not [p for p in report["problems"] if p["kind"] == "never-trained"]


def test_layer_that_writes_with_assign(in_data: None, mypkg: ModuleType) -> None:
    report = gradscope.inspect("mypkg.models:assign_layer")
    target = mypkg.assign_layer()
    model = target.model
    expected = tape(target.losses["mse"], model.trainable_variables)
    _agrees(report.to_dict(), {"mse": expected})
    pair = report.loss("mse").pair("snapshotter/encoder/kernel")
    assert pair.status == m.ASSIGN
    (cut,) = pair.cut_points
    assert (cut.op, cut.kind) == ("AssignVariableOp", "assign")
    assert cut.source == f"mypkg/models.py:{line_of(MODELS, 'self.buffer.assign(')}"
    assert report.loss("mse").pair("snapshotter/decoder/kernel").status == m.OK


def test_loss_through_numpy_is_answered_eagerly(in_data: None, loose: ModuleType) -> None:
    report = gradscope.inspect("loose_model.py:through_numpy")
    target = loose.through_numpy()
    expected = tapes(target["losses"], target["model"].trainable_variables)
    assert all(g.none for g in expected["numpy_error"][1].values())  # bare TF: all None
    _agrees(report.to_dict(), expected)
    error = report.loss("numpy_error")
    assert {p.status for p in error.pairs} == {m.UNEXPLAINED}
    assert all(p.cut_points == () for p in error.pairs)  # no TensorFlow op to name
    (note,) = error.notes
    where = f"loose_model.py:{line_of(LOOSE, 'model(X).numpy() - Y')}"
    assert f"converts a tensor to NumPy at {where}" in note
    assert "cut outside TensorFlow (the value was converted to NumPy)" in note
    scale = report.loss("numpy_scale")
    assert {p.status for p in scale.pairs} == {m.OK}
    assert f"loose_model.py:{line_of(LOOSE, 'np.std(predicted.numpy())')}" in scale.notes[0]


def test_compiled_multi_output_model_through_keras_targets(mypkg: ModuleType) -> None:
    report = gradscope.inspect(mypkg.compiled)
    model = mypkg.two_heads_model()
    x, price, kind = mypkg.data()
    variables = model.trainable_variables

    def price_loss() -> tf.Tensor:
        return 2.0 * keras.losses.MeanSquaredError()(price, model(x)[0])

    def kind_loss() -> tf.Tensor:
        return 0.5 * keras.losses.SparseCategoricalCrossentropy()(kind, model(x)[1])

    def total() -> tf.Tensor:  # what fit minimizes: every weighted term (no model.losses here)
        return price_loss() + kind_loss()

    expected = tapes({"price": price_loss, "kind": kind_loss, "total": total}, variables)
    _agrees(report.to_dict(), expected)
    assert [loss.name for loss in report.losses] == ["price", "kind", "total"]
    assert report.name == "two_heads"
    assert report.loss("price").pair("kind/kernel").status == m.DISCONNECTED
    assert report.loss("kind").pair("price/bias").status == m.DISCONNECTED
    assert report.problems == ()  # expect, given to gradscope.keras.targets, holds
    # the losses gradscope makes for the model are at the user's targets(...) line, and every
    # line the report names is the user's own, never gradscope's (keras.py)
    at = f"models.py:{line_of(DATA / 'mypkg' / 'models.py', 'return gradscope.keras.targets(')}"
    assert [loss.source.rpartition("/")[2] for loss in report.losses] == [at] * 3
    assert at in report.loss("price").pair("kind/kernel").note  # the cause in words
    text = json.dumps(report.to_dict())
    assert "_src" not in text and "gradscope/" not in text and "unknown line" not in text


def test_empty_variable_gets_a_zero_gradient_not_nan() -> None:
    """A zero-size variable's gradient has no elements: bare TF returns it, all (none) zero."""
    empty = tf.Variable(tf.zeros([0]), name="empty")
    w = tf.Variable([1.0, 2.0, 3.0], name="w")

    def loss() -> tf.Tensor:
        return tf.reduce_sum(w * w) + tf.reduce_sum(empty)

    report = gradscope.inspect(gradscope.Target(losses={"loss": loss}, variables=[empty, w]))
    value, grads = tape(loss, [empty, w])
    assert not grads["empty"].none and grads["empty"].finite and grads["empty"].zero
    _agrees(report.to_dict(), {"loss": (value, grads)})
    assert report.loss("loss").pair("empty").status == m.ZERO
    assert report.problems == ()
