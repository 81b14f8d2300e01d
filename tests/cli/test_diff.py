"""``gradscope diff`` as a user runs it: formats, matrix mode, --output, errors, --help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, RunCli

MULTITASK = "configs/multitask.yaml"
GAN = "configs/gan-grad-loss.yaml"


def _schemas() -> tuple[dict, dict]:
    report = json.loads((ROOT / "schema" / "report-v1.json").read_text())
    diff = json.loads((ROOT / "schema" / "diff-v1.json").read_text())
    return report, diff


@pytest.mark.tf
def test_diff_table_shows_both_losses_side_by_side(run_cli: RunCli) -> None:
    result = run_cli("diff", MULTITASK, "loss_1", "loss_2")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "A: loss_1" in out and "B: loss_2" in out
    assert "no path leads from task1/w to loss_2" in out
    assert "Pulling against each other" in out
    assert "whole model: cosine" in out
    assert "\x1b[" not in out  # no colour when piped
    assert out.splitlines()[-1].startswith("6 variables: 2 shared, 2 only loss_1, 2 only loss_2")
    assert result.stderr == ""


@pytest.mark.tf
def test_diff_json_gan_discriminator_has_cosine_minus_one(run_cli: RunCli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run_cli("diff", GAN, "d_loss", "g_loss_all", "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    report_schema, diff_schema = _schemas()
    jsonschema.validate(data, report_schema)  # the inspect report of both losses ...
    jsonschema.validate(data, diff_schema)  # ... plus the diff
    for name in ("disc/w", "disc/b"):
        variable = data["diff"]["variables"][name]
        assert (variable["cosine"], variable["sign_agreement"], variable["norm_ratio"]) == (
            -1.0, 0.0, 1.0)  # fmt: skip
    assert data["diff"]["cosine"] == -1.0
    assert data["diff"]["reach"]["only_b"] == ["gen/w", "gen/b"]


@pytest.mark.tf
def test_diff_without_loss_names_prints_the_matrix_of_every_pair(run_cli: RunCli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    result = run_cli("diff", GAN, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    jsonschema.validate(data, _schemas()[1])
    names = ["d_loss", "g_loss", "g_loss_all", "scaled_y"]
    assert list(data["matrix"]) == names
    assert data["matrix"]["d_loss"]["g_loss_all"] == -1.0
    assert data["matrix"]["d_loss"]["g_loss"] is None  # they share no variable
    assert data["conflicts"] == [{"loss_a": "d_loss", "loss_b": "g_loss_all", "cosine": -1.0}]
    assert len(data["pairs"]) == 6
    table = run_cli("diff", GAN)
    assert table.returncode == 0, table.stderr
    assert "d_loss × g_loss_all" in table.stdout
    assert (
        table.stdout.splitlines()[-1]
        == "4 losses, 6 pairs: 1 in conflict, 1 aligned, 4 with no cosine"
    )


@pytest.mark.tf
def test_diff_three_names_give_the_matrix_of_those_losses(run_cli: RunCli) -> None:
    result = run_cli("diff", GAN, "d_loss", "g_loss", "g_loss_all", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert list(json.loads(result.stdout)["matrix"]) == ["d_loss", "g_loss", "g_loss_all"]


@pytest.mark.tf
def test_diff_markdown_is_written_atomically(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "diff.md"
    out.write_text("previous")
    bad = run_cli("diff", MULTITASK, "loss_1", "nope", "--output", str(out))
    assert bad.returncode == 2
    assert out.read_text() == "previous"
    good = run_cli("diff", MULTITASK, "loss_1", "loss_2", "--format", "markdown", "-o", str(out))
    assert good.returncode == 0, good.stderr
    assert good.stdout == ""
    assert out.read_text().startswith("### gradscope diff: `loss_1` vs `loss_2` in `multitask`")
    assert [p.name for p in tmp_path.iterdir()] == ["diff.md"]


def test_diff_unknown_loss_lists_the_spec_losses(
    run_cli: RunCli, no_tensorflow: dict[str, str]
) -> None:
    result = run_cli("diff", MULTITASK, "loss_1", "nope", env=no_tensorflow)  # found before TF
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "gradscope diff: configs/multitask.yaml: unknown loss 'nope'; "
        "the spec has loss_1, loss_2, loss_1_own"
    ]
    typo = run_cli("diff", MULTITASK, "loss_1", "los_2", env=no_tensorflow)
    assert "unknown loss 'los_2' (did you mean 'loss_2'" in typo.stderr
    assert result.stdout == ""


def test_diff_one_loss_is_a_usage_error(run_cli: RunCli, no_tensorflow: dict[str, str]) -> None:
    result = run_cli("diff", MULTITASK, "loss_1", env=no_tensorflow)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "only one loss given ('loss_1')" in result.stderr


def test_diff_bad_spec_names_file_line_and_column(
    run_cli: RunCli, write_spec, no_tensorflow: dict[str, str]
) -> None:
    path = write_spec(
        """\
        gradscope: 1
        variables:
          w: {shape: [2]}
        nodes:
          - {name: s, op: reduce_sum, inputs: [w]}
        losses:
          a: s
          b: nowhere
        """
    )
    result = run_cli("diff", path, "a", "b", env=no_tensorflow)
    assert result.returncode == 2
    assert f"{path}:8:6: losses.b:" in result.stderr
    assert "Traceback" not in result.stderr


def test_diff_help_needs_no_tensorflow(run_cli: RunCli, no_tensorflow: dict[str, str]) -> None:
    result = run_cli("diff", "--help", env=no_tensorflow)
    assert result.returncode == 0, result.stderr
    assert "SPEC [LOSS_A LOSS_B]" in result.stdout
    assert "cosine" in result.stdout and "Exit codes:" in result.stdout
    listed = run_cli("--help", env=no_tensorflow)
    assert "diff" in listed.stdout
