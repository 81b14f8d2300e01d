"""``nan`` explained: the first node whose forward value or gradient became non-finite.

The expected node comes from bare TensorFlow in the test: every node runs eagerly under a
GradientTape, its forward value is checked, and the gradient of the loss with respect to every
node's output and every input of a node tells where the backward pass first became
non-finite (``bare_origin``). gradscope's answer comes from its own diagnostic pass.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import gradscope
from gradscope._src.frontends.yaml import load_spec
from gradscope._src.frontends.yaml.model import Spec
from gradscope._src.report import render
from gradscope._src.results import report as m
from tests.reference import _call, _resolve, _variables

pytestmark = pytest.mark.tf

HERE = Path(__file__)
THIS = "tests/engine/test_anomaly.py"


def _kind(value: Any) -> str | None:
    """``"nan"``, ``"inf"``, ``"-inf"`` (the first present, in that order) or None."""
    array = np.asarray(value, dtype=np.float64)
    if np.isnan(array).any():
        return "nan"
    if (array == np.inf).any():
        return "inf"
    if (array == -np.inf).any():
        return "-inf"
    return None


def _depends(spec: Spec, loss_node: str) -> list[str]:
    """The names (nodes, inputs, variables) the loss node's value is computed from, in order."""
    wanted = {loss_node}
    for node in reversed(spec.nodes):
        if node.name in wanted:
            wanted |= {r.name for r in node.refs()}
    names = [d.name for d in spec.inputs] + [d.name for d in spec.variables]
    return [n for n in names + [node.name for node in spec.nodes] if n in wanted]


def bare_origin(spec: Spec, loss: str) -> tuple[str, str, str]:
    """``(name, "forward"|"gradient", value)``: where bare TensorFlow first sees NaN/Inf.

    Forward: the first name, in spec order, whose value is non-finite. Gradient: the last node
    whose output's gradient is finite while the gradient of one of its inputs is not.
    """
    import keras

    keras.utils.set_random_seed(spec.seed)
    env: dict[str, Any] = {
        d.name: tf.constant(np.asarray(d.values, np.float32)) for d in spec.inputs
    }
    env.update(_variables(tf, keras, spec))
    with tf.GradientTape(persistent=True) as tape:
        for value in env.values():
            tape.watch(value)
        for node in spec.nodes:
            args = [_resolve(a, env) for a in node.args]
            kwargs = {k: _resolve(a, env) for k, a in node.kwargs}
            env[node.name] = _call(tf, keras, node, args, kwargs, {})
    target = env[spec.loss(loss).node]
    depends = _depends(spec, spec.loss(loss).node)
    for name in depends:
        kind = _kind(tf.convert_to_tensor(env[name]))
        if kind is not None:
            return name, "forward", kind
    grads = dict(zip(depends, tape.gradient(target, [env[n] for n in depends]), strict=True))
    for node in reversed(spec.nodes):
        if node.name not in depends or _kind(grads[node.name]) is not None:
            continue
        for ref in node.refs():
            if grads.get(ref.name) is not None and _kind(grads[ref.name]) is not None:
                return node.name, "gradient", str(_kind(grads[ref.name]))
    raise AssertionError("bare TensorFlow finds every value finite")


SPEC = """\
    gradscope: 1
    inputs:
      neg_in: {values: [-1.0, 4.0]}
    variables:
      neg: {values: [-1.0, 4.0]}
      zero: {values: [0.0, 4.0]}
      z2: {values: [0.0, 1.0]}
      w: {values: [1.0, 2.0]}
    nodes:
      - {name: h, op: multiply, inputs: [neg, 2.0]}
      - {name: s, op: sqrt, inputs: [h]}
      - {name: sqrt_neg, op: reduce_sum, inputs: [s]}
      - {name: r, op: sqrt, inputs: [zero]}
      - {name: sqrt_zero, op: reduce_sum, inputs: [r]}
      - {name: lg, op: log, inputs: [z2]}
      - {name: log_zero, op: reduce_sum, inputs: [lg]}
      - {name: a, op: sqrt, inputs: [neg_in]}
      - {name: b, op: multiply, inputs: [a, w]}
      - {name: later, op: reduce_sum, inputs: [b]}
      - {name: fine, op: reduce_sum, inputs: [w]}
    losses:
      sqrt_neg: {node: sqrt_neg, vars: [neg]}
      sqrt_zero: {node: sqrt_zero, vars: [zero]}
      log_zero: {node: log_zero, vars: [z2]}
      later: {node: later, vars: [w]}
      fine: {node: fine, vars: [w]}
"""

#: loss -> the nan pair's variable and the node bare TensorFlow is expected to blame
CASES = {
    "sqrt_neg": ("neg", ("s", "forward", "nan")),
    "sqrt_zero": ("zero", ("r", "gradient", "inf")),
    "log_zero": ("z2", ("lg", "forward", "-inf")),
    "later": ("w", ("a", "forward", "nan")),
}


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("anomaly") / "nans.yaml"
    path.write_text(textwrap.dedent(SPEC), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def report(spec_file: str) -> m.Report:
    return gradscope.inspect(spec_file)


def _line(spec: Spec, name: str) -> int:
    for group in (spec.nodes, spec.inputs, spec.variables):
        for item in group:
            if item.name == name:
                return item.pos.line
    raise KeyError(name)


@pytest.mark.parametrize("loss", sorted(CASES))
def test_anomaly_names_the_node_bare_tensorflow_blames(
    spec_file: str, report: m.Report, loss: str
) -> None:
    spec = load_spec(spec_file)
    variable, written = CASES[loss]
    expected = bare_origin(spec, loss)
    assert expected == written  # the spec does what its comment says, in bare TensorFlow
    pair = report.loss(loss).pair(variable)
    assert pair.status == m.NAN
    origin = pair.nan_origin
    assert origin is not None
    assert (origin.node, origin.where, origin.value) == expected
    assert origin.source == f"{spec_file}:{_line(spec, expected[0])}"


def test_anomaly_names_the_forward_op_and_the_gradient_op(report: m.Report) -> None:
    forward = report.loss("sqrt_neg").pair("neg").nan_origin
    gradient = report.loss("sqrt_zero").pair("zero").nan_origin
    assert forward is not None and gradient is not None
    assert (forward.op, forward.tf_op) == ("Sqrt", "N1/Sqrt")
    assert gradient.op == "Sqrt"
    assert gradient.tf_op.endswith("N3/Sqrt_grad/SqrtGrad")


def test_anomaly_only_nan_pairs_get_an_origin(report: m.Report) -> None:
    for _loss, pair in report.pairs():
        assert (pair.nan_origin is not None) == (pair.status == m.NAN)
    assert report.loss("fine").pair("w").status == m.OK


def test_anomaly_in_the_problem_message_json_table_and_markdown(
    spec_file: str, report: m.Report
) -> None:
    spec = load_spec(spec_file)
    (problem,) = [p for p in report.problems if p.loss == "log_zero"]
    where = f"{spec_file}:{_line(spec, 'lg')}"
    assert problem.message == (
        f"`z2` gets a gradient with NaN or Inf from `log_zero`: -Inf first appears in the "
        f"forward value of `lg` (Log), {where}"
    )
    pair = report.to_dict()["losses"]["sqrt_zero"]["variables"]["zero"]
    assert pair["nan_origin"] == {
        "node": "r",
        "op": "Sqrt",
        "source": f"{spec_file}:{_line(spec, 'r')}",
        "where": "gradient",
        "value": "inf",
        "tf_op": pair["nan_origin"]["tf_op"],
    }
    assert "nan_origin" not in report.to_dict()["losses"]["fine"]["variables"]["w"]
    table = render(report, "table", width=200)
    assert "Where NaN/Inf first appeared" in table
    row = rf"sqrt_zero\s+zero\s+Inf in the gradient of r \(Sqrt\)\s+{spec_file}:{_line(spec, 'r')}"
    assert re.search(row, table), table
    markdown = render(report, "markdown")
    assert f"- `later` ← `w`: NaN in the forward value of a (Sqrt), at {spec_file}:" in markdown


def test_anomaly_an_input_or_variable_holding_nan(write_spec: Any) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          bad: {values: [.nan, 1.0]}
        variables:
          w: {values: [1.0, 2.0]}
          v: {values: [.inf, 1.0]}
        nodes:
          - {name: c, op: multiply, inputs: [bad, w]}
          - {name: l1, op: reduce_sum, inputs: [c]}
          - {name: d, op: square, inputs: [v]}
          - {name: l2, op: reduce_sum, inputs: [d]}
        losses:
          from_input: {node: l1, vars: [w]}
          from_variable: {node: l2, vars: [v]}
        """
    )
    report = gradscope.inspect(path)
    spec = load_spec(path)
    assert bare_origin(spec, "from_input") == ("bad", "forward", "nan")
    assert bare_origin(spec, "from_variable") == ("v", "forward", "inf")
    first = report.loss("from_input").pair("w").nan_origin
    second = report.loss("from_variable").pair("v").nan_origin
    assert first is not None and second is not None
    assert (first.node, first.where, first.value, first.source) == ("bad", "forward", "nan",
                                                                   f"{path}:3")  # fmt: skip
    assert (second.node, second.value, second.source) == ("v", "inf", f"{path}:6")
    (problem,) = [p for p in report.problems if p.loss == "from_variable"]
    assert problem.message.endswith(f"Inf is already in the value of `v`, {path}:6")


def _line_of(text: str) -> int:
    lines = HERE.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def test_anomaly_python_target_names_the_op_and_the_users_line() -> None:
    w = tf.Variable([0.0, 1.0], name="w")
    v = tf.Variable([-1.0, 1.0], name="v")
    target = {
        "losses": {
            "root": lambda: tf.reduce_sum(tf.sqrt(w) * 3.0),  # gradient Inf at the sqrt
            "log": lambda: tf.reduce_sum(tf.math.log(v) ** 2),  # forward NaN at the log
        }
    }
    # bare TensorFlow: the forward values are finite for root, the gradient is not
    with tf.GradientTape(persistent=True) as tape:
        root = tf.sqrt(w)
        logs = tf.math.log(v)
        root_loss = tf.reduce_sum(root * 3.0)
        log_loss = tf.reduce_sum(logs**2)
    assert _kind(root) is None and _kind(tape.gradient(root_loss, root)) is None
    assert _kind(tape.gradient(root_loss, w)) == "inf"
    assert _kind(logs) == "nan" and _kind(tape.gradient(log_loss, v)) == "nan"
    report = gradscope.inspect(target)
    root_origin = report.loss("root").pair("w").nan_origin
    log_origin = report.loss("log").pair("v").nan_origin
    assert root_origin is not None and log_origin is not None
    root_line = _line_of("# gradient Inf at the sqrt")
    assert (root_origin.op, root_origin.where, root_origin.value) == ("Sqrt", "gradient", "inf")
    assert root_origin.source == f"{THIS}:{root_line}"
    assert (log_origin.op, log_origin.where, log_origin.value) == ("Log", "forward", "nan")
    assert log_origin.source == f"{THIS}:{_line_of('# forward NaN at the log')}"


def test_anomaly_costs_nothing_without_a_nan_pair(
    monkeypatch: pytest.MonkeyPatch, write_spec: Any
) -> None:
    from gradscope._src.engine.nan import origin as anomaly

    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("no diagnostic pass without a nan pair")

    monkeypatch.setattr(anomaly, "explain", fail)
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {values: [1.0, 4.0]}
        nodes:
          - {name: s, op: sqrt, inputs: [w]}
          - {name: l, op: reduce_sum, inputs: [s]}
        losses:
          l: l
        """
    )
    assert gradscope.inspect(path).loss("l").pair("w").status == m.OK


def test_anomaly_json_report_validates_against_the_schema(spec_file: str, run_cli: Any) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run_cli("inspect", spec_file, "--format", "json", "--quiet")
    assert result.returncode == 0, result.stderr
    schema = json.loads((HERE.parents[2] / "schema" / "report-v1.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(json.loads(result.stdout))


def test_anomaly_eager_only_loss_says_it_was_not_looked_into() -> None:
    w = tf.Variable([0.0, 1.0], name="w")
    # .numpy() cannot be traced: gradscope answers this loss from an eager pass only
    target = {"losses": {"eager": lambda: tf.reduce_sum(tf.sqrt(w)) + 0.0 * float(w.numpy()[1])}}
    with tf.GradientTape() as tape:
        value = target["losses"]["eager"]()
    assert _kind(tape.gradient(value, w)) == "inf"  # bare TensorFlow: the gradient is Inf
    loss = gradscope.inspect(target).loss("eager")
    assert loss.pair("w").status == m.NAN and loss.pair("w").nan_origin is None
    assert (
        "where the NaN/Inf in the gradient of `w` first appeared is unknown: the loss runs "
        "only eagerly, and only traced losses are looked into"
    ) in loss.notes
