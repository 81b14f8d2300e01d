"""``gradscope inspect`` on Python targets, as a user runs it next to their code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.frontends.python.bare import DATA, line_of

pytestmark = pytest.mark.tf


def test_inspect_python_target_in_every_format(run_cli: RunCli, tmp_path: Path) -> None:
    table = run_cli("inspect", "loose_model.py:build", cwd=DATA)
    assert table.returncode == 0, table.stderr
    assert table.stderr == ""  # no TensorFlow banners, no autograph warnings
    where = f"loose_model.py:{line_of(DATA / 'loose_model.py', 'tf.stop_gradient(x) * self')}"
    assert f"(StopGradient) at {where}" in table.stdout
    assert table.stdout.splitlines()[-1].startswith("5 pairs: 3 ok, 2 none")
    out = tmp_path / "report.md"
    markdown = run_cli(
        "inspect", "loose_model.py:through_numpy", "--format", "markdown", "-o", str(out), cwd=DATA
    )
    assert markdown.returncode == 0, markdown.stderr
    text = out.read_text()
    assert text.startswith("### gradscope: `plain`")
    assert "**Notes**" in text and "- `numpy_error`: converts a tensor to NumPy at" in text


def test_inspect_python_target_loss_option(run_cli: RunCli) -> None:
    result = run_cli("inspect", "mypkg.models:two_heads", "--loss", "kind", "--format", "json",
                     cwd=DATA)  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data["losses"]) == ["kind"]
    assert data["notes"] == [
        "only some losses were inspected, so never-trained variables are not reported"
    ]


def test_inspect_help_explains_python_targets(run_cli: RunCli) -> None:
    result = run_cli("inspect", "--help")
    assert result.returncode == 0
    assert "module.path:function" in result.stdout and "file.py:function" in result.stdout
