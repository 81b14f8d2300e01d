"""``gradscope check --timeline``: findings of real runs gate CI, in every check format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope.cli import main
from gradscope.timeline.record import write
from tests.conftest import RunCli
from tests.timeline.test_plot import deep_timeline


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.tf
def test_check_timeline_of_a_healthy_run_passes() -> None:
    from tests.timeline import scenarios

    code, stdout, _ = _invoke("check", "--timeline", str(scenarios.healthy().path))
    assert code == 0
    assert "passed" in stdout


@pytest.mark.tf
def test_check_timeline_findings_fail_in_every_format() -> None:
    from tests.timeline import scenarios

    run = scenarios.dying_relu()
    findings = run.timeline["findings"]
    site = run.timeline["steps"][0]["site"]
    file, _, line = site.rpartition(":")
    outputs = {}
    for fmt in ("table", "json", "junit", "sarif", "github", "markdown"):
        code, outputs[fmt], _ = _invoke("check", "--timeline", str(run.path), "--format", fmt)
        assert code == 1, fmt
    problems = json.loads(outputs["json"])["problems"]
    assert [(p["kind"], p["variable"], p["source"]) for p in problems] == [
        (f["kind"], f["variable"], site) for f in findings
    ]
    junit = ET.fromstring(outputs["junit"])
    assert junit.get("failures") == str(len(findings))
    sarif = json.loads(outputs["sarif"])["runs"][0]
    rules = [r["id"] for r in sarif["tool"]["driver"]["rules"]]
    assert "dead" in rules
    for result in sarif["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"] == "dead"
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == file
        assert location["region"]["startLine"] == int(line)
    annotations = [x for x in outputs["github"].splitlines() if x.startswith("::error")]
    assert len(annotations) == len(findings)
    assert all(
        a.startswith(f"::error file={file},line={line},title=gradscope dead::") for a in annotations
    )
    assert outputs["markdown"].count("**dead**") == len(findings)
    assert "dying ReLU" in outputs["table"]


def test_check_timeline_needs_no_tensorflow(
    tmp_path: Path, run_cli: RunCli, no_tensorflow: dict[str, str]
) -> None:
    path = tmp_path / "t.json"
    write(str(path), deep_timeline(layers=8))
    done = run_cli("check", "--timeline", str(path), "--format", "github", env=no_tensorflow)
    assert done.returncode == 1, done.stderr
    assert "::error file=deep.py,line=40,title=gradscope dead::block_7/dense/kernel" in done.stdout


def test_check_without_spec_or_timeline_is_a_usage_error() -> None:
    code, _, stderr = _invoke("check")
    assert code == 2 and "Missing argument 'SPEC...' (or --timeline FILE)." in stderr


def test_check_unreadable_timeline_is_exit_2(tmp_path: Path) -> None:
    code, _, stderr = _invoke("check", "--timeline", str(tmp_path / "missing.json"))
    assert code == 2 and stderr.startswith("gradscope check: cannot read")
