"""``--numeric``: gradients against central finite differences, held to bare TensorFlow.

Each expected number comes from bare TensorFlow in the test: the same model written out
eagerly, its gradient from a ``GradientTape``, its central difference computed here at the
coordinate gradscope reports as the worst, with the step gradscope reports.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import gradscope
from gradscope._src.engine.numeric import fd
from gradscope._src.frontends.yaml import load_spec
from gradscope._src.frontends.yaml.forward import values
from gradscope._src.report.style import summary
from gradscope._src.results import report as m
from tests.reference import gradients as bare_gradients

pytestmark = pytest.mark.tf

HERE = Path(__file__)
ROOT = HERE.parents[2]
THIS = "tests/engine/test_numeric.py"

SMOOTH = """\
    gradscope: 1
    seed: 7
    inputs:
      x: {shape: [8, 5]}
      labels: {shape: [8], dtype: int32, range: [0, 3]}
    variables:
      w1: {shape: [5, 6]}
      b1: {shape: [6], init: zeros}
      w2: {shape: [6, 3]}
    nodes:
      - {name: h, op: matmul, inputs: [x, w1]}
      - {name: hb, op: add, inputs: [h, b1]}
      - {name: a, op: tanh, inputs: [hb]}
      - {name: logits, op: matmul, inputs: [a, w2]}
      - {name: ce, op: nn.sparse_softmax_cross_entropy_with_logits,
         inputs: {labels: labels, logits: logits}}
      - {name: loss, op: reduce_mean, inputs: [ce]}
    losses:
      ce: loss
      pushed: {node: logits, grad_loss: -2.0}
"""


def _arrays(spec: Any) -> dict[str, np.ndarray]:
    """The spec's own values, as the spec generates them (float32), by name."""
    out = {d.name: values.input_array(d, spec.seed) for d in spec.inputs}
    out.update({d.name: values.variable_array(d, spec.seed) for d in spec.variables})
    return out


def _smooth_losses(arrays: dict[str, Any], dtype: Any) -> dict[str, Any]:
    """The SMOOTH spec written out in bare TensorFlow: loss name -> a function of variables."""
    x = tf.constant(arrays["x"].astype(dtype))
    labels = tf.constant(arrays["labels"])

    def logits(v: dict[str, Any]) -> Any:
        return tf.tanh(x @ v["w1"] + v["b1"]) @ v["w2"]

    return {
        "ce": lambda v: tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits(v))
        ),
        "pushed": lambda v: -2.0 * tf.reduce_sum(logits(v)),
    }


def _bare_check(
    loss: Any, variables: dict[str, Any], name: str, index: tuple[int, ...], step: float
) -> tuple[float, float]:
    """``(tape gradient, central difference)`` at one coordinate, in the variables' dtype."""
    with tf.GradientTape() as tape:
        value = loss(variables)
    grad = tape.gradient(value, variables[name]).numpy()
    base = variables[name].numpy()
    x = float(base[index])
    h = step * max(1.0, abs(x))
    points = []
    for shifted in (x + h, x - h):
        array = base.copy()
        array[index] = shifted
        variables[name].assign(array)
        points.append((float(array[index]), float(loss(variables))))
    variables[name].assign(base)
    (x_plus, f_plus), (x_minus, f_minus) = points
    return float(grad[index]), (f_plus - f_minus) / (x_plus - x_minus)


@pytest.fixture(scope="module")
def smooth(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("numeric") / "smooth.yaml"
    path.write_text(textwrap.dedent(SMOOTH), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def smooth_report(smooth: str) -> m.Report:
    return gradscope.inspect(smooth, numeric=True)


def test_numeric_agrees_on_a_smooth_spec_with_bare_float64(
    smooth: str, smooth_report: m.Report
) -> None:
    arrays = _arrays(load_spec(smooth))
    variables = {n: tf.Variable(arrays[n].astype(np.float64)) for n in ("w1", "b1", "w2")}
    losses = _smooth_losses(arrays, np.float64)
    checked = 0
    for loss, pair in smooth_report.pairs():
        assert pair.status == m.OK and pair.numeric is not None
        result, c = pair.numeric, pair.numeric.check
        assert result.verdict == m.AGREES, (loss.name, pair.variable, c)
        assert (c.dtype, c.tolerance, c.step) == ("float64", fd.tolerance("float64"), 6e-6)
        assert c.max_rel_error is not None and c.max_rel_error < 1e-6
        assert c.worst is not None
        analytic, numeric = _bare_check(
            losses[loss.name], variables, pair.variable, c.worst, c.step
        )
        assert c.analytic == pytest.approx(analytic, rel=1e-9, abs=1e-12)
        assert c.numeric == pytest.approx(numeric, rel=1e-6, abs=1e-9)
        checked += 1
    assert checked == 6


def test_numeric_reports_its_run_and_every_ok_pair(smooth_report: m.Report) -> None:
    data = smooth_report.to_dict()
    assert data["numeric"]["dtype"] == "float64"
    assert data["numeric"]["coordinates"] == fd.DEFAULT_COORDINATES
    # 2 base evaluations, then 2 per coordinate: w1 16 of 30, b1 all 6, w2 16 of 18
    assert data["numeric"]["evaluations"] == 2 + 2 * (16 + 6 + 16)
    pair = data["losses"]["ce"]["variables"]["w1"]["numeric"]
    assert pair["verdict"] == "agrees"
    assert (pair["coordinates"], pair["size"]) == (16, 30)
    assert pair["reason"] is None and pair["expected_agreement"] is False
    assert "numeric: 6 agree" in summary(smooth_report)


def test_numeric_float32_python_target_is_looser_than_float64(
    smooth: str, smooth_report: m.Report
) -> None:
    arrays = _arrays(load_spec(smooth))
    variables = {n: tf.Variable(arrays[n], name=n) for n in ("w1", "b1", "w2")}
    bare = _smooth_losses(arrays, np.float32)
    target = {"losses": {n: (lambda f=f: f(variables)) for n, f in bare.items()}}
    report = gradscope.inspect(target, numeric=True)
    assert report.to_dict()["numeric"]["dtype"] is None  # the target's own dtypes
    for loss, pair in report.pairs():
        assert pair.numeric is not None
        c = pair.numeric.check
        wide = smooth_report.loss(loss.name).pair(pair.variable).numeric
        assert wide is not None and wide.check.max_rel_error is not None
        assert pair.numeric.verdict == m.AGREES, (loss.name, pair.variable, c)
        assert (c.dtype, c.tolerance, c.step) == ("float32", 2e-2, 5e-3)
        assert c.max_rel_error is not None
        assert wide.check.max_rel_error < c.max_rel_error <= c.tolerance
        analytic, _ = _bare_check(bare[loss.name], variables, pair.variable, c.worst, c.step)
        assert c.analytic == pytest.approx(analytic, rel=1e-4)  # float32, graph vs eager


def test_numeric_large_variable_is_sampled_deterministically(write_spec: Any) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [4, 64]}
        variables:
          w: {shape: [64, 64]}
        nodes:
          - {name: h, op: matmul, inputs: [x, w]}
          - {name: s, op: sin, inputs: [h]}
          - {name: loss, op: reduce_mean, inputs: [s]}
        losses:
          loss: loss
        """
    )
    first = gradscope.inspect(path, numeric=True).loss("loss").pair("w").numeric
    second = gradscope.inspect(path, numeric=True).loss("loss").pair("w").numeric
    assert first is not None and second is not None
    assert first.verdict == m.AGREES
    assert (first.check.coordinates, first.check.size) == (16, 4096)
    assert first.check == second.check
    # the coordinate with the largest gradient is always among those checked
    grad = np.asarray(bare_gradients(load_spec(path))["loss"]["w"])
    top = tuple(int(i) for i in np.unravel_index(np.argmax(np.abs(grad)), grad.shape))
    assert top in fd.coordinates(np.abs(grad), 16, "w")


def test_numeric_coordinates_half_largest_half_seeded() -> None:
    importance = np.arange(100, dtype=np.float64).reshape(10, 10)
    chosen = fd.coordinates(importance, 10, "w")
    assert len(chosen) == 10 and chosen == sorted(chosen)
    assert {(9, 5), (9, 6), (9, 7), (9, 8), (9, 9)} <= set(chosen)  # the 5 largest
    assert chosen == fd.coordinates(importance, 10, "w")
    assert chosen != fd.coordinates(importance, 10, "other name")
    assert fd.coordinates(np.ones(3), 10, "w") == [(0,), (1,), (2,)]


def test_numeric_straight_through_estimator_is_an_expected_difference() -> None:
    path = "configs/straight-through.yaml"
    report = gradscope.inspect(path, numeric=True)
    result = report.loss("loss_ste").pair("w").numeric
    assert result is not None and result.verdict == m.EXPECTED_DIFFERENCE
    spec = load_spec(path)
    line = spec.node("gap_frozen").pos.line
    assert result.reason == (
        f"its paths cut at `gap_frozen` (StopGradient), {path}:{line} carry no gradient "
        "(a straight-through estimator)"
    )
    assert not report.problems
    # bare TensorFlow: the tape's gradient is not zero, the function is flat (round)
    c = result.check
    data = values.input_array(spec.inputs[0], spec.seed).astype(np.float64)
    w = tf.Variable(_ste_weights(spec))

    def loss(v: dict[str, Any]) -> Any:
        h = tf.constant(data) @ v["w"]
        return tf.reduce_mean(tf.square(h + tf.stop_gradient(tf.round(h) - h)))

    analytic, numeric = _bare_check(loss, {"w": w}, "w", c.worst, c.step)
    assert c.analytic == pytest.approx(analytic, rel=1e-5)
    assert c.numeric == pytest.approx(numeric, abs=1e-9)
    assert analytic != pytest.approx(numeric, rel=0.5)


def _ste_weights(spec: Any) -> np.ndarray:
    """``w`` of the straight-through spec as gradscope initializes it (glorot_uniform)."""
    import keras

    from gradscope._src.frontends.yaml.forward.model import keras_initializer

    (d,) = spec.variables
    init = keras_initializer(keras, d.init, values.derived_seed(spec.seed, d.name))
    return np.asarray(init(d.shape, dtype="float32"), dtype=np.float64)


def test_numeric_assigned_variable_is_an_expected_difference_and_restored() -> None:
    path = "configs/assign-breaks-tape.yaml"
    report = gradscope.inspect(path, numeric=True)
    result = report.loss("o").pair("x").numeric
    assert result is not None and result.verdict == m.EXPECTED_DIFFERENCE
    line = load_spec(path).node("write_patch").pos.line
    assert result.reason.startswith(
        f"the model assigns to the variable at `write_patch` (ResourceStridedSliceAssign), "
        f"{path}:{line}"
    )
    # the overwritten coordinate: TensorFlow's gradient flows, the loss does not change
    assert result.check.worst is not None and result.check.worst[0] < 2
    assert result.check.numeric == 0.0
    # every evaluation starts from the same values: the losses that read x agree
    for variable in ("patch", "base"):
        fixed = report.loss("o_fixed").pair(variable).numeric
        assert fixed is not None and fixed.verdict == m.AGREES


def _cube_target(expect: dict[str, Any] | None = None) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((6, 3)), tf.float32)
    w = tf.Variable(rng.standard_normal((3, 2)).astype("float32"), name="w")

    @tf.custom_gradient
    def cube(t: Any) -> Any:
        def grad(dy: Any) -> Any:  # deliberately wrong: the derivative is 3 t**2
            return dy * 2.0 * t**2

        return t**3, grad

    target: dict[str, Any] = {
        "losses": {"cubed": lambda: tf.reduce_mean(cube(x @ w))},
        "variables": [w],
    }
    if expect is not None:
        target["expect"] = expect
    return target


def _line_of(text: str) -> int:
    lines = HERE.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_numeric_wrong_custom_gradient_is_expected_unless_expect_asks() -> None:
    report = gradscope.inspect(_cube_target(), numeric=True)
    result = report.loss("cubed").pair("w").numeric
    assert result is not None and result.verdict == m.EXPECTED_DIFFERENCE
    line = _line_of("# deliberately wrong")
    assert result.reason == (
        f"it passes a gradient of its own (tf.custom_gradient) at `cube`, {THIS}:{line}"
    )
    assert not report.problems
    # bare TensorFlow: the tape's gradient is 2/3 of the central difference
    c = result.check
    target = _cube_target()
    (w,) = target["variables"]
    analytic, numeric = _bare_check(lambda _v: target["losses"]["cubed"](), {"w": w}, "w",
                                    c.worst, c.step)  # fmt: skip
    assert c.analytic == pytest.approx(analytic, rel=1e-5)
    assert analytic / numeric == pytest.approx(2 / 3, rel=0.05)
    assert c.max_rel_error == pytest.approx(1 / 3, rel=0.05)


def test_numeric_wrong_custom_gradient_differs_when_expect_asks() -> None:
    asked = {"cubed": {"numeric": ["w"]}}
    report = gradscope.inspect(_cube_target(asked), numeric=True)
    result = report.loss("cubed").pair("w").numeric
    assert result is not None and result.verdict == m.DIFFERS
    (problem,) = report.problems
    assert problem.kind == m.NUMERIC_DIFFERS
    assert problem.message.startswith(
        "the gradient of `w` from `cubed` differs from finite differences: largest relative "
        "error 0.33 (tolerance 2e-02; all 6 coordinates, float32); expect.cubed.numeric "
        "lists `w`, and it passes a gradient of its own (tf.custom_gradient)"
    )
    result_check = gradscope.check(_cube_target(), expect=asked, numeric=True)
    assert not result_check.passed
    assert [p.kind for p in result_check.failures] == [m.NUMERIC_DIFFERS]
    assert gradscope.check(_cube_target(), expect=asked).passed  # without --numeric


def test_numeric_python_target_variables_are_left_as_found() -> None:
    v = tf.Variable([1.0, 2.0], name="v")
    counter = tf.Variable(0.0, name="counter", trainable=False)

    def loss() -> Any:
        counter.assign_add(1.0)
        return tf.reduce_sum(v**2)

    target = {"losses": {"loss": loss}, "variables": [v]}
    before = counter.numpy()
    gradscope.inspect(target)
    plain = counter.numpy() - before
    gradscope.inspect(target, numeric=True)
    assert counter.numpy() - before == 2 * plain
    assert v.numpy().tolist() == [1.0, 2.0]


def test_numeric_random_loss_is_skipped() -> None:
    w = tf.Variable([1.0, 2.0], name="w")
    target = {"losses": {"noisy": lambda: tf.reduce_sum(w * tf.random.normal([2]))}}
    result = gradscope.inspect(target, numeric=True).loss("noisy").pair("w").numeric
    assert result is not None and result.verdict == m.SKIPPED
    assert result.reason.startswith("the loss is not deterministic")


def test_numeric_falls_back_to_float32_without_a_float64_kernel(write_spec: Any) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [1, 2, 2, 6]}
        variables:
          w: {shape: [6, 6]}
        nodes:
          - {name: h, op: matmul, inputs: [x, w]}
          - {name: n, op: nn.local_response_normalization, inputs: [h],
             attrs: {depth_radius: 2}}
          - {name: loss, op: reduce_sum, inputs: [n]}
        losses:
          loss: loss
        """
    )
    with pytest.raises(tf.errors.InvalidArgumentError):  # bare TensorFlow: no float64 LRN
        tf.nn.local_response_normalization(tf.zeros([1, 2, 2, 6], tf.float64))
    report = gradscope.inspect(path, numeric=True)
    result = report.loss("loss").pair("w").numeric
    assert result is not None and result.verdict == m.AGREES
    assert result.check.dtype == "float32"
    assert report.to_dict()["numeric"]["dtype"] is None
    (note,) = report.notes
    assert note.startswith("numeric: the float64 rebuild failed (")
    assert note.endswith("checked in the spec's own dtypes instead")


def test_numeric_keras_layers_start_from_the_float32_weights() -> None:
    path = "tests/cases/keras-layers.yaml"
    report = gradscope.inspect(path, numeric=True)
    bare = bare_gradients(load_spec(path))
    for loss, pair in report.pairs():
        if pair.numeric is None:
            continue
        c = pair.numeric.check
        assert pair.numeric.verdict == m.AGREES and c.dtype == "float64"
        grad = np.asarray(tf.convert_to_tensor(bare[loss.name][pair.variable]))
        # the float64 model is evaluated where the float32 one is: the same gradient
        assert c.analytic == pytest.approx(float(grad[c.worst]), rel=1e-4, abs=1e-6)
