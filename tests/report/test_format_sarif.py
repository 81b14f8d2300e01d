"""SARIF 2.1.0: every field GitHub code scanning requires, checked one by one."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from gradscope._src.analysis.check import check_reports
from gradscope._src.location import Location
from gradscope._src.report import Format, render
from gradscope._src.report.sarif import artifact, source_root, to_sarif, uri
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from tests import checks
from tests.report import samples


def _sarif(result) -> dict:
    return json.loads(render(result, "sarif"))


def test_sarif_top_level_fields() -> None:
    log = _sarif(checks.result())
    assert log["version"] == "2.1.0"
    assert isinstance(log["$schema"], str) and log["$schema"].startswith("https://")
    assert "sarif" in log["$schema"] and "2.1.0" in log["$schema"]
    assert isinstance(log["runs"], list) and len(log["runs"]) == 1


def test_sarif_driver_has_name_and_a_rule_per_kind() -> None:
    driver = _sarif(checks.result())["runs"][0]["tool"]["driver"]
    assert driver["name"] == "gradscope"
    assert isinstance(driver["version"], str)
    rules = driver["rules"]
    assert [r["id"] for r in rules] == list(m.PROBLEM_KINDS)
    for rule in rules:
        assert rule["shortDescription"]["text"]
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] == "error"


def test_sarif_every_result_has_what_code_scanning_requires() -> None:
    result = checks.result(checks.every_kind(), checks.clean())
    run = _sarif(result)["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert len(run["results"]) == len(result.problems) == 4
    for item, problem in zip(run["results"], result.problems, strict=True):
        assert item["ruleId"] == problem.kind
        assert rules[item["ruleIndex"]] == item["ruleId"]
        assert item["level"] == "error"
        assert item["message"]["text"] == problem.message
        (location,) = item["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "configs/x.yaml"
        assert physical["region"]["startLine"] == problem.line
        assert isinstance(physical["region"]["startLine"], int)
        assert item["properties"]["loss"] == problem.loss
        assert item["properties"]["variable"] == problem.variable
        assert "baselineState" not in item  # no baseline, no baseline state


def test_sarif_locates_each_kind_at_its_line() -> None:
    run = _sarif(checks.result())["runs"][0]
    lines = {r["ruleId"]: r["locations"][0]["physicalLocation"]["region"]["startLine"]
             for r in run["results"]}  # fmt: skip
    # patterns of expect (connected at 41, none at 40); the variables body/w (8) and spare (11)
    assert lines == {"unexpected-none": 41, "unexpected-connected": 40, "nan": 8,
                     "never-trained": 11}  # fmt: skip


def test_sarif_cut_points_travel_with_the_result() -> None:
    run = _sarif(checks.result())["runs"][0]
    first = run["results"][0]
    assert first["properties"]["cutPoints"] == [
        {"node": "frozen", "op": "StopGradient", "kind": "stopped", "source": "configs/x.yaml:17"}
    ]


def test_sarif_known_problems_are_unchanged_notes() -> None:
    run = _sarif(checks.result(checks.every_kind(), known=1))["runs"][0]
    states = [(r["ruleId"], r["level"], r["baselineState"]) for r in run["results"]]
    assert states == [
        ("unexpected-none", "note", "unchanged"),
        ("unexpected-connected", "error", "new"),
        ("nan", "error", "new"),
        ("never-trained", "error", "new"),
    ]
    assert run["invocations"][0]["exitCode"] == 1


def test_sarif_fingerprints_survive_rewording_and_moves() -> None:
    r = checks.every_kind()
    moved = replace(
        r,
        problems=tuple(
            replace(p, message="x", location=Location(p.spec, p.line + 3)) for p in r.problems
        ),
    )
    before = [x["partialFingerprints"] for x in to_sarif(check_reports([r]))["runs"][0]["results"]]
    after = [
        x["partialFingerprints"] for x in to_sarif(check_reports([moved]))["runs"][0]["results"]
    ]
    assert before == after and len({json.dumps(f) for f in before}) == 4


@pytest.mark.parametrize(
    "path,expected",
    [
        ("configs/x.yaml", "configs/x.yaml"),
        ("./configs//x.yaml", "configs/x.yaml"),
        ("configs/my spec.yaml", "configs/my%20spec.yaml"),
        (os.path.abspath("configs/x.yaml"), "configs/x.yaml"),
    ],
)
def test_sarif_uris_are_relative_with_forward_slashes(path: str, expected: str) -> None:
    assert uri(path) == expected


def test_sarif_uri_outside_the_current_directory_is_absolute() -> None:
    outside = os.path.join(os.path.dirname(os.getcwd()), "elsewhere", "x.yaml")
    assert uri(outside).startswith("file:///")


def test_sarif_locates_a_spec_outside_the_source_root_absolutely(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`../x.yaml` relative to %SRCROOT% points outside it; an absolute file: URI does not."""
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    outside = artifact("../x.yaml")
    assert outside == {"uri": (tmp_path / "x.yaml").resolve().as_uri()}
    assert artifact("./configs/x.yaml") == {"uri": "configs/x.yaml", "uriBaseId": "%SRCROOT%"}


def test_sarif_uris_are_relative_to_the_source_root_from_a_subfolder(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from a subfolder of the repository: the URI is still the repository's path."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "models" / "specs").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "models")
    run = to_sarif(checks.result(checks.clean(spec="specs/a.yaml")))["runs"][0]
    location = run["artifacts"][0]["location"]
    assert location == {"uri": "models/specs/a.yaml", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"
    assert source_root() == str(tmp_path.resolve())


def test_sarif_source_root_option_wins(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    text = render(checks.result(checks.clean(spec="models/a.yaml")), "sarif",
                  source_root=str(tmp_path / "models"))  # fmt: skip
    run = json.loads(text)["runs"][0]
    assert run["artifacts"][0]["location"]["uri"] == "a.yaml"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].endswith("/models/")


def test_sarif_report_of_a_bad_spec_places_each_error(tmp_path, monkeypatch) -> None:
    from gradscope._src.errors import SpecError, SpecErrors
    from gradscope._src.location import Location
    from gradscope._src.report import failed

    monkeypatch.chdir(tmp_path)
    errors = SpecErrors([SpecError(Location("a.yaml", 5, 40), "nodes[0]", "saw 'ww'")])
    log = json.loads(failed.render(errors, "sarif", source_root=str(tmp_path)) or "")
    assert log["version"] == "2.1.0" and log["runs"][0]["tool"]["driver"]["rules"][0]["help"]
    run = log["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert run["invocations"][0]["exitCode"] == 2
    (result,) = run["results"]
    assert result["ruleId"] == "spec-error" and result["message"]["text"] == "nodes[0]: saw 'ww'"
    place = result["locations"][0]["physicalLocation"]
    assert place["artifactLocation"] == {"uri": "a.yaml", "uriBaseId": "%SRCROOT%"}
    assert place["region"] == {"startLine": 5, "startColumn": 40}


def test_run_sarif_has_the_runs_rules_and_command_line() -> None:
    log = json.loads(render(samples.trainable_run(), Format.SARIF))
    (run,) = log["runs"]
    assert run["automationDetails"]["id"] == "gradscope/run/"
    assert run["invocations"][0]["commandLine"] == "gradscope run train.py"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [
        "unexpected-none", "nan", "never-trained", "unexpected-connected",
        "replica-mismatch", "moved-without-gradient", "always-zero"]  # fmt: skip
    assert not any("spec" in json.dumps(r) for r in rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["never-trained", "unexpected-connected"]
    assert [rules[r["ruleIndex"]]["id"] for r in results] == [r["ruleId"] for r in results]
    assert {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results} == {23}


def test_run_stopped_is_a_warning_in_sarif() -> None:
    def notifications(report: rr.RunReport) -> list[dict]:
        (run,) = json.loads(render(report, Format.SARIF))["runs"]
        return run["invocations"][0]["toolExecutionNotifications"]

    assert notifications(samples.clean_run()) == []
    (stop,) = notifications(samples.stopped(samples.clean_run()))
    assert (stop["level"], stop["descriptor"]) == ("warning", {"id": "stopped"})
    assert stop["message"]["text"].startswith("gradscope run: stopped by --stop at step 2 of")
    notes = notifications(samples.trainable_run())
    assert notifications(samples.stopped(samples.trainable_run()))[1:] == notes  # the notes stay
