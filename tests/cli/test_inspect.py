"""``gradscope inspect`` as a user runs it: formats, --loss, --output, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunCli

pytestmark = pytest.mark.tf

MULTITASK = "configs/multitask.yaml"


def test_inspect_table_names_every_loss_and_variable(run_cli: RunCli) -> None:
    result = run_cli("inspect", MULTITASK)
    assert result.returncode == 0, result.stderr
    for name in ("loss_1", "loss_2", "body/w", "task2/w", "disconnected"):
        assert name in result.stdout
    assert "\x1b[" not in result.stdout  # no colour when piped
    assert "pairs:" in result.stdout.splitlines()[-1]
    assert result.stderr == ""  # no TensorFlow banners, no progress when not a terminal


def test_inspect_json_matches_the_report_schema(run_cli: RunCli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run_cli("inspect", "configs/stop-gradient.yaml", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    schema = json.loads((ROOT / "schema" / "report-v1.json").read_text())
    jsonschema.validate(data, schema)
    pair = data["losses"]["exp1"]["variables"]["exp1/w1"]
    assert pair["status"] == "none:stopped"
    assert pair["cut_points"] == [
        {"node": "exp1/a_stopped", "op": "StopGradient", "kind": "stopped",
         "source": "configs/stop-gradient.yaml:19"}
    ]  # fmt: skip


def test_inspect_loss_option_limits_the_report(run_cli: RunCli) -> None:
    result = run_cli("inspect", MULTITASK, "--loss", "loss_2", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert list(json.loads(result.stdout)["losses"]) == ["loss_2"]


def test_inspect_unknown_loss_is_a_usage_error(run_cli: RunCli) -> None:
    result = run_cli("inspect", MULTITASK, "--loss", "nope")
    assert result.returncode == 2
    assert "unknown loss 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


def test_inspect_output_is_written_atomically(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    out.write_text("previous")
    bad = run_cli("inspect", "configs/missing.yaml", "--output", str(out))
    assert bad.returncode == 2
    assert out.read_text() == "previous"  # a failed run leaves the old file alone
    good = run_cli("inspect", MULTITASK, "--format", "markdown", "--output", str(out))
    assert good.returncode == 0, good.stderr
    assert good.stdout == ""
    assert out.read_text().startswith("### gradscope")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary left over


def test_inspect_build_error_names_node_and_line(run_cli: RunCli, write_spec) -> None:
    path = write_spec(
        """\
        gradscope: 1
        inputs:
          x: {shape: [2, 3]}
        variables:
          w: {shape: [4, 5]}
        nodes:
          - {name: m, op: matmul, inputs: [x, w]}
          - {name: loss, op: reduce_sum, inputs: [m]}
        losses:
          loss: loss
        """
    )
    result = run_cli("inspect", path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{path}:7:5: node 'm' (matmul): ")


def test_patterns_match_exact_names_and_unmatched_ones_are_noted(write_spec) -> None:
    """`vars: ["w[0]"]` names the variable `w[0]` (as a glob alone it would mean `w0`), and
    a `vars` glob that matches no variable is a note, not silence (an `expect` one is an
    error: tests/frontends/yaml/test_patterns.py)."""
    import tensorflow as tf

    import gradscope
    from gradscope._src.results import report as m

    path = write_spec(
        """\
        gradscope: 1
        variables:
          "w[0]": {values: [1.0, 2.0]}
          v: {values: [3.0, 4.0]}
        nodes:
          - {name: s, op: reduce_sum, inputs: ["w[0]"]}
          - {name: t, op: reduce_sum, inputs: [v]}
          - {name: l, op: add, inputs: [s, t]}
        losses:
          a: {node: l, vars: ["w[0]"]}
          b: {node: l, vars: ["nothing*", "v"]}
        expect:
          a:
            none: ["v"]
        """
    )
    w, v = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w) + tf.reduce_sum(v)
    (grad,) = tape.gradient(loss, [w])  # var_list [w[0]]
    report = gradscope.inspect(path)
    pair = report.loss("a").pair("w[0]")
    assert pair.status == m.OK
    assert pair.norm == pytest.approx(float(tf.norm(grad)), rel=1e-6)
    assert report.loss("a").pair("v").status == m.EXCLUDED
    assert report.loss("b").pair("w[0]").status == m.EXCLUDED
    assert report.notes == (f"losses.b.vars: 'nothing*' at {path}:11 matches no variable",)


def test_a_nan_loss_value_reads_nan_in_the_table_and_null_in_json(write_spec) -> None:
    """JSON has no NaN (null there); the table says nan rather than the '-' of no value."""
    import tensorflow as tf
    from click.testing import CliRunner

    from gradscope._src.cli import main

    w = tf.Variable([-1.0, 4.0])
    assert tf.math.is_nan(tf.reduce_sum(tf.sqrt(w)))  # bare TensorFlow's value
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {values: [-1.0, 4.0]}
        nodes:
          - {name: r, op: sqrt, inputs: [w]}
          - {name: l, op: reduce_sum, inputs: [r]}
        losses: {l: l}
        """
    )
    table = CliRunner().invoke(main, ["inspect", path]).output
    header = next(line for line in table.splitlines() if line.startswith("variable"))
    assert header.split()[-1] == "nan"
    data = json.loads(CliRunner().invoke(main, ["inspect", path, "--format", "json"]).output)
    assert data["losses"]["l"]["value"] is None
