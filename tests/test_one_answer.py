"""One bug, one answer, whatever the door (issue 29, points 3 and 4): one variable is one
problem; a timeline carries every problem its run reported and ``check --timeline`` exits as
the run did. References: bare TensorFlow's None gradients, and the run's own exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run import _invoke, _program

pytestmark = pytest.mark.tf

UNREAD_HEAD = """\
import keras
import tensorflow as tf

inputs = keras.Input((4,))
hidden = keras.layers.Dense(8, name="body")(inputs)
model = keras.Model(inputs, [keras.layers.Dense(1, name="main_head")(hidden),
                             keras.layers.Dense(2, name="aux_head")(hidden)], name="detector")
x = tf.ones((2, 4))


def loss():
    return tf.reduce_sum(model(x)[0])


def build():
    return {"losses": {"main": loss}, "expect": {"main": {"connected": ["*"]}}}
"""


def _bare_none(folder: Path) -> set[str]:
    """The variables bare TensorFlow gives no gradient from the target's loss."""
    import importlib.util

    import tensorflow as tf

    spec = importlib.util.spec_from_file_location("unread_head_bare", folder / "unread_head.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variables = module.model.trainable_variables
    with tf.GradientTape() as tape:
        value = module.loss()
    grads = tape.gradient(value, variables)
    return {v.path for v, g in zip(variables, grads, strict=True) if g is None}


def test_check_reports_one_problem_per_variable(run_cli, tmp_path: Path) -> None:
    (tmp_path / "unread_head.py").write_text(UNREAD_HEAD, encoding="utf-8")
    none = _bare_none(tmp_path)
    assert none == {"aux_head/kernel", "aux_head/bias"}  # the head no loss reads
    result = run_cli("check", "unread_head.py:build", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)  # one target: the report's own shape
    named = [p["variable"] for p in report["problems"]]
    assert sorted(named) == sorted(none)  # each once: never unexpected-none and never-trained
    assert {p["kind"] for p in report["problems"]} == {"unexpected-none"}


def test_run_timeline_carries_the_runs_problems(tmp_path: Path) -> None:
    timeline = tmp_path / "t.json"
    code, out, _ = _invoke("--timeline", str(timeline), "--format", "json", "--output", "-",
                           _program("refreeze.py"))  # fmt: skip
    run = json.loads(out[out.index("{\n") :])
    assert code == 1 and run["problems"]  # a frozen layer the traced step still trains
    findings = json.loads(timeline.read_text())["findings"]
    held = {(f["site"], f["variable"], f["kind"]) for f in findings}
    assert {(p["site"], p["variable"], p["kind"]) for p in run["problems"]} <= held
    from click.testing import CliRunner

    from gradscope.cli import main

    checked = CliRunner().invoke(main, ["check", "--timeline", str(timeline)])
    assert checked.exit_code == code, checked.output
