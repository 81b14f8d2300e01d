"""``inspect --numeric`` and ``check --numeric`` as users run them, and ``expect.<loss>.numeric``.

Which gradients differ is established against bare TensorFlow in
``tests/engine/test_numeric.py``; these tests hold the command line to it: exit codes, the
table, the JSON report against its schema, and the spec field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gradscope._src.frontends.yaml import load_spec
from gradscope._src.frontends.yaml.model import Spec

ROOT = Path(__file__).resolve().parents[2]
STE = ROOT / "configs" / "straight-through.yaml"


def _asking(write_spec: Any) -> str:
    """The straight-through spec, with ``expect.loss_ste.numeric`` asking ``w`` to agree."""
    text = STE.read_text(encoding="utf-8")
    asked = text.replace("    connected: [w]\n", "    connected: [w]\n    numeric: [w]\n")
    assert asked != text
    return str(write_spec(asked, name="ste.yaml"))


def test_numeric_spec_field_is_validated(write_spec: Any, run_cli: Any) -> None:
    path = _asking(write_spec)
    spec: Spec = load_spec(path)
    (pattern,) = spec.expectation("loss_ste").numeric  # type: ignore[union-attr]
    assert pattern.glob == "w"
    bad = write_spec(
        STE.read_text(encoding="utf-8").replace(
            "    none: [w]\n", "    none: [w]\n    numeric: [w]\n"
        ),
        name="bad.yaml",
    )
    result = run_cli("validate", bad)
    assert result.returncode == 2
    assert "expect.loss_naive.numeric" in result.stderr + result.stdout
    assert "expected a pattern not also under none, saw 'w'" in result.stderr + result.stdout


@pytest.mark.tf
def test_check_numeric_passes_an_expected_difference(run_cli: Any) -> None:
    result = run_cli("check", str(STE), "--numeric", "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "expected-difference" in result.stdout
    assert "numeric: 1 expected difference" in result.stdout


@pytest.mark.tf
def test_check_numeric_fails_only_when_expect_asks(write_spec: Any, run_cli: Any) -> None:
    path = _asking(write_spec)
    failing = run_cli("check", path, "--numeric", "--quiet", "--format", "json")
    assert failing.returncode == 1, failing.stderr
    report = json.loads(failing.stdout)
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "schema" / "report-v1.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    (problem,) = report["problems"]
    assert problem["kind"] == "numeric-differs"
    line = next(p.pos.line for e in load_spec(path).expect for p in e.numeric)
    assert problem["source"] == f"{path}:{line}"
    numeric = report["losses"]["loss_ste"]["variables"]["w"]["numeric"]
    assert numeric["verdict"] == "differs" and numeric["expected_agreement"] is True
    plain = run_cli("check", path, "--quiet")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert "expect.loss_ste.numeric is held only with --numeric" in plain.stdout


@pytest.mark.tf
def test_check_numeric_problem_in_every_check_format(write_spec: Any, run_cli: Any) -> None:
    path = _asking(write_spec)
    for fmt, needle in (
        ("table", "numeric-differs"),
        ("github", "title=gradscope numeric-differs"),
        ("junit", 'type="numeric-differs"'),
        ("sarif", '"ruleId": "numeric-differs"'),
        ("markdown", "**numeric-differs**"),
    ):
        result = run_cli("check", path, "--numeric", "--quiet", "--format", fmt)
        assert result.returncode == 1, (fmt, result.stderr)
        assert needle in result.stdout, fmt


@pytest.mark.tf
def test_inspect_numeric_json_matches_the_schema(run_cli: Any) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    config = ROOT / "configs" / "assign-breaks-tape.yaml"
    result = run_cli("inspect", str(config), "--numeric", "--quiet", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    schema = json.loads((ROOT / "schema" / "report-v1.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    verdicts = {
        (loss, variable): pair["numeric"]["verdict"]
        for loss, body in report["losses"].items()
        for variable, pair in body["variables"].items()
        if "numeric" in pair
    }
    assert verdicts == {
        ("o", "x"): "expected-difference",
        ("o_fixed", "patch"): "agrees",
        ("o_fixed", "base"): "agrees",
    }
    ok = {
        (loss, variable)
        for loss, body in report["losses"].items()
        for variable, pair in body["variables"].items()
        if pair["status"] == "ok"
    }
    assert set(verdicts) == ok
    assert report["numeric"]["dtype"] == "float64"


@pytest.mark.tf
def test_inspect_numeric_table_section(run_cli: Any) -> None:
    result = run_cli("inspect", str(STE), "--numeric", "--quiet")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    heading = next(i for i, line in enumerate(lines) if line.startswith("Finite differences"))
    assert lines[heading] == (
        "Finite differences (float64, up to 16 coordinates per variable, 98 evaluations)"
    )
    assert lines[heading + 1].split() == [
        "loss", "variable", "verdict", "error", "/", "tolerance", "coordinates", "why",
    ]  # fmt: skip
    row = lines[heading + 2].split()
    assert row[:7] == ["loss_ste", "w", "expected-difference", "1.0e+00", "/", "1e-05", "16"]


def test_numeric_flag_is_documented(run_cli: Any) -> None:
    for command in ("inspect", "check"):
        result = run_cli(command, "--help")
        assert result.returncode == 0
        assert "--numeric" in result.stdout
        assert "finite differences" in " ".join(result.stdout.split())
