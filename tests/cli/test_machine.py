"""Failures as data (``cli/machine.py``): with --format json or sarif every failure, usage
errors included, is one object valid against schema/error-v1.json, where the report would be;
exit codes and the one-line messages on standard error stay as they were. And ``gradscope
schema NAME`` prints each file of schema/. No TensorFlow: every failure here comes before it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gradscope._src import failure
from gradscope._src.cli import machine
from tests.conftest import ROOT, run_in_process

jsonschema = pytest.importorskip("jsonschema")
SCHEMAS = ROOT / "schema"
SARIF_SCHEMA = ROOT / "tests" / "report" / "data" / "sarif-schema-2.1.0.json"


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{name}-v1.json").read_text("utf-8"))
    return loaded


def _failure(*args: str, code: int = 2, cwd: Path = ROOT) -> dict[str, Any]:
    result = run_in_process(*args, cwd=cwd)
    assert result.returncode == code, (result.stdout, result.stderr)
    doc: dict[str, Any] = json.loads(result.stdout)
    jsonschema.validate(doc, _schema("error"))
    assert doc["error"]["exit_code"] == code
    assert result.stderr.strip(), "the one-line message still goes to standard error"
    return doc


@pytest.mark.parametrize(
    ("args", "kind", "says"),
    [
        (["inspect", "--format", "json"], "usage", "Missing argument 'SPEC'"),
        (["inspect", "m.yaml", "--format", "json", "--device", "tpu"], "usage", "'tpu'"),
        (["inspect", "configs/two-heads.yaml", "--format=json", "--loss"], "usage", "--loss"),
        (["check", "--format", "json"], "usage", "SPEC"),
        (["diff", "--format", "json"], "usage", "Missing argument"),
        (["nosuch", "--format", "json"], "usage", "No such command"),
        (["inspect", "no/such.yaml", "--format", "json"], "spec", "no such file"),
        (["inspect", "pkg_nowhere.mod:build", "--format", "json"], "target", "pkg_nowhere"),
        (["fix", "--format", "json", "--check", "--apply", "t.py"], "usage", "give one"),
        (["validate", "no/such.yaml", "--format", "json"], "usage", "--format"),
        (["schema", "report", "--format", "json"], "usage", "--format"),
        (["mcp", "--root", "no/such", "--format", "json"], "usage", "--format"),
    ],
)
def test_every_failure_is_one_json_object(args: list[str], kind: str, says: str) -> None:
    doc = _failure(*args)
    assert doc["error"]["kind"] == kind and says in doc["error"]["message"]
    assert doc["errors"][0]["message"] == doc["error"]["message"]


def test_spec_errors_are_each_located() -> None:
    doc = _failure("check", "docs/broken.yaml", "--format", "json")
    assert doc["command"] == "check" and len(doc["errors"]) == 3
    places = [(e["location"]["file"], e["location"]["line"]) for e in doc["errors"]]
    assert places == [("docs/broken.yaml", 5), ("docs/broken.yaml", 8), ("docs/broken.yaml", 11)]
    assert {e["kind"] for e in doc["errors"]} == {"spec"}


def test_sarif_failure_is_a_valid_sarif_log_holding_the_error(tmp_path: Path) -> None:
    out = tmp_path / "gradscope.sarif"
    result = run_in_process("check", "docs/broken.yaml", "--format", "sarif", "-o", str(out))
    assert result.returncode == 2 and result.stdout == ""
    log = json.loads(out.read_text("utf-8"))  # the SARIF log a CI upload step reads
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    jsonschema.validate(log["properties"], _schema("error"))
    (run,) = log["runs"]
    assert run["invocations"][0]["exitCode"] == 2
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"]
            for r in run["results"]] == [5, 8, 11]  # fmt: skip
    usage = run_in_process("inspect", "--format", "sarif")
    assert usage.returncode == 2
    log = json.loads(usage.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    assert log["properties"]["error"]["kind"] == "usage"


def test_a_failure_keeps_the_previous_output_file_and_says_itself_on_stdout(
    tmp_path: Path,
) -> None:
    out = tmp_path / "report.json"
    out.write_bytes(b"the previous report\n")
    result = run_in_process("inspect", "no/such.yaml", "--format", "json", "--output", str(out))
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["kind"] == "spec"
    assert out.read_bytes() == b"the previous report\n"  # no earlier report lost to a failure


def test_table_format_keeps_plain_lines() -> None:
    result = run_in_process("inspect", "no/such.yaml")
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("gradscope inspect: no/such.yaml")


def test_run_says_its_failure_where_its_report_goes() -> None:
    result = run_in_process("run", "--format", "json")
    assert result.returncode == 2
    doc = json.loads(result.stderr[result.stderr.index("{") :])  # run's report: stderr
    jsonschema.validate(doc, _schema("error"))


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["inspect", "m.yaml", "--format", "json"], ("inspect", "json", None)),
        (["check", "--format=sarif", "-o", "x.sarif", "m.yaml"], ("check", "sarif", "x.sarif")),
        (
            ["inspect", "m.yaml", "--loss", "--format", "--format", "json"],
            ("inspect", "json", None),
        ),
        (["run", "train.py", "--format", "json"], None),  # the program's own option
        (["run", "--format", "json", "train.py", "--format", "table"], ("run", "json", None)),
        (["inspect", "m.yaml", "--", "--format", "json"], None),
        (["--traceback", "diff", "--format", "json"], ("diff", "json", None)),
        (["inspect", "m.yaml", "--format", "table"], None),
        ([], None),
    ],
)
def test_wanted_reads_the_format_as_click_will(args: list[str], wanted: Any) -> None:
    found = machine.wanted(args)
    assert (found[:3] if found else None) == wanted


def test_a_failure_that_ends_the_process_from_a_thread_is_data(capfd) -> None:
    """--timeout and a target's os._exit say their failure through failure.said, on the
    standard output the command started with (a target may have moved Python's)."""
    machine.sink(machine.Wanted("inspect", "json", None))
    try:
        failure.said("timeout", "gradscope inspect: stopped after 1 s (--timeout)", 2)
    finally:
        machine.sink(None)
    doc = json.loads(capfd.readouterr().out)
    jsonschema.validate(doc, _schema("error"))
    assert (doc["command"], doc["error"]["kind"], doc["error"]["exit_code"]) == (
        "inspect", "timeout", 2)  # fmt: skip
    failure.said("timeout", "no sink: nothing", 2)
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("name", ["spec", "report", "run", "check", "diff", "timeline", "fix",
                                  "error"])  # fmt: skip
def test_schema_prints_the_file_schema_holds(name: str) -> None:
    result = run_in_process("schema", name)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (SCHEMAS / f"{name}-v1.json").read_text("utf-8")
    jsonschema.Draft202012Validator.check_schema(json.loads(result.stdout))


def test_schema_without_a_name_is_the_spec_and_every_file_is_offered() -> None:
    assert run_in_process("schema").stdout == (SCHEMAS / "spec-v1.json").read_text("utf-8")
    from gradscope._src.cli.validate import SCHEMAS as OFFERED

    assert {f"{n}-v1.json" for n in OFFERED} == {p.name for p in SCHEMAS.glob("*.json")}
    bad = run_in_process("schema", "nope")
    assert bad.returncode == 2 and "'nope' is not one of" in bad.stderr


def test_a_real_timeline_validates_against_its_schema(tmp_path: Path) -> None:
    """The Recorder's file (what run --timeline and the Monitor write): dense, sparse, None
    and NaN gradients, per-loss norms and cosines, and its findings."""
    import numpy as np

    from gradscope._src.timeline import Recorder

    recorder = Recorder(every=1, timeline=tmp_path / "t.json", program="train.py")
    a, b = np.array([1.0, 0.0]), np.array([-1.0, 1.0])
    for step in (1, 2, 3, 4):
        recorder.record(step, "train.py:9", 0.5, [
            ("w", a + b, np.ones(2)), ("spare", None, np.zeros(3), "none:stopped"),
            ("head/bias", np.array([np.nan, 1.0]), None)],
            losses={"main": (0.7, [("w", a)]), "aux": (0.3, [("w", b)])})  # fmt: skip
    recorder.close()
    timeline = json.loads((tmp_path / "t.json").read_text("utf-8"))
    assert timeline["findings"] and timeline["steps"][0]["cosine"]
    jsonschema.validate(timeline, _schema("timeline"))
    timeline["steps"][0]["variables"]["w"]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError, match="'fine' is not one of"):
        jsonschema.validate(timeline, _schema("timeline"))


def test_a_command_without_formats_never_writes_a_failure_over_its_output(tmp_path: Path) -> None:
    """``plot -o x.png --format sarif``: plot has no --format, so -o is the picture's path; the
    failure (SARIF on standard output) never lands there."""
    result = run_in_process("plot", "no_such.json", "-o", str(tmp_path / "x.png"),
                            "--format", "sarif", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 2 and not (tmp_path / "x.png").exists()
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text("utf-8"))).validate(log)
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
