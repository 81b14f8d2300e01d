"""A typo in an ``expect`` pattern: refused by validate at its line, and by check for targets."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml import load_spec
from tests.conftest import RunCli

SPEC = """\
gradscope: 1
inputs:
  x: {shape: [2, 3]}
variables:
  task1/w: {shape: [3, 1]}
nodes:
  - {name: d, op: layer, attrs: {class: Dense, config: {units: 1}}, inputs: [x]}
  - {name: t, op: matmul, inputs: [x, task1/w]}
  - {name: l, op: add, inputs: [t, d]}
  - {name: loss, op: reduce_sum, inputs: [l]}
losses:
  a: loss
expect:
  a:
    connected: ["task1/*", "d/*", "d/kernel"]
    none: ["tsk1/*"]
"""


def test_validate_refuses_a_pattern_that_matches_no_variable(write_spec) -> None:
    path = write_spec(SPEC)
    with pytest.raises(SpecErrors) as caught:
        load_spec(path)
    (error,) = caught.value.errors  # the layer's weights (d/*) may match: not refused
    assert (error.line, error.column, error.field) == (16, 12, "expect.a.none")
    assert error.message.startswith("'tsk1/*' matches no variable (did you mean 'task1/*'")


def test_validate_command_exits_2_at_the_pattern(run_cli: RunCli, write_spec) -> None:
    path = write_spec(SPEC)
    result = run_cli("validate", path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"{path}:16:12: expect.a.none: 'tsk1/*' matches no variable")


TARGET = """\
import tensorflow as tf


def build():
    w = tf.Variable([1.0, 2.0], name="task1/w")
    return {
        "losses": {"a": lambda: tf.reduce_sum(w * w)},
        "expect": {"a": {"connected": ["tsk1/*"]}},
    }
"""


@pytest.mark.tf
def test_check_fails_on_a_target_pattern_that_matches_nothing(
    run_cli: RunCli, tmp_path: Path
) -> None:
    (tmp_path / "typo_target.py").write_text(textwrap.dedent(TARGET), encoding="utf-8")
    result = run_cli("check", "typo_target.py:build", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    column = TARGET.splitlines()[7].index('"tsk1/*"') + 1  # where the user wrote it
    assert result.stderr.startswith(
        f"typo_target.py:8:{column}: expect.a.connected: 'tsk1/*' matches no variable"
    ), result.stderr
    inspected = run_cli("inspect", "typo_target.py:build", cwd=tmp_path)
    assert inspected.returncode == 0  # inspect shows the report, with a note
    note = f"typo_target.py:8:{column}: expect.a.connected: 'tsk1/*' matches no variable"
    assert note in " ".join(inspected.stdout.split())
