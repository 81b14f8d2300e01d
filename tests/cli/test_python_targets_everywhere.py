"""Every command that takes a SPEC takes a Python target too: check, diff, graph."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.conftest import RunCli
from tests.frontends.python.bare import DATA, line_of, load_file, tape

pytestmark = pytest.mark.tf

LOOSE = DATA / "loose_model.py"


def _bare_none() -> set[str]:
    """Variables bare TensorFlow gives no gradient from the loose target's loss (the same
    model and loss, written out here)."""
    import tensorflow as tf

    module = load_file(LOOSE)
    net = module.Net()

    def loss() -> tf.Tensor:
        return tf.reduce_mean(tf.square(net(module.X) - module.Y))

    loss()  # build the weights, as a first training step would
    _, grads = tape(loss, net.trainable_variables)
    return {name for name, g in grads.items() if g.none}


def test_check_python_target_fails_on_the_users_line(run_cli: RunCli) -> None:
    result = run_cli("check", "loose_model.py:build", "--format", "github", cwd=DATA)
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    none = _bare_none()
    assert none == {"net/encoder/kernel", "net/encoder/bias"}
    for variable in none:
        assert any(f"`{variable}` gets no gradient from `mse`" in e for e in errors), errors
    cut = line_of(LOOSE, "tf.stop_gradient(x) * self")
    assert all(f"loose_model.py:{cut}" in e for e in errors if "unexpected-none" in e)
    assert all("file=loose_model.py,line=" in e for e in errors)


def test_check_python_target_junit_has_one_failure_per_problem(run_cli: RunCli) -> None:
    result = run_cli("check", "loose_model.py:build", "--format", "junit", cwd=DATA)
    assert result.returncode == 1
    root = ET.fromstring(result.stdout)
    failures = root.findall(".//failure")
    problems = json.loads(run_cli("check", "loose_model.py:build", "--format", "json",
                                  cwd=DATA).stdout)["problems"]  # fmt: skip
    assert len(failures) == len(problems) > 0


def test_diff_python_target_matrix_and_pair(run_cli: RunCli) -> None:
    matrix = run_cli("diff", "mypkg.models:two_heads", "--format", "json", cwd=DATA)
    assert matrix.returncode == 0, matrix.stderr
    pair = run_cli("diff", "mypkg.models:two_heads", "price", "kind", "--format", "json", cwd=DATA)
    assert pair.returncode == 0, pair.stderr
    data = json.loads(pair.stdout)
    assert data["diff"]["loss_a"] == "price" and data["diff"]["loss_b"] == "kind"


def test_graph_python_target_marks_the_stop_gradient(run_cli: RunCli) -> None:
    result = run_cli("graph", "loose_model.py:build", "--loss", "mse", cwd=DATA)
    assert result.returncode == 0, result.stderr
    cut = line_of(LOOSE, "tf.stop_gradient(x) * self")
    assert f"stop_gradient · loose_model.py:{cut}" in result.stdout
    assert 'class="cut"' in result.stdout
