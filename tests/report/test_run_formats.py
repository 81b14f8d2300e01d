"""Every ``gradscope run`` format renders a hand-made report (no TensorFlow)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

import pytest

from gradscope._src.analysis import run as run_policy
from gradscope._src.report import RUN_FORMATS, Format, render
from gradscope._src.results import run as rr
from tests.report import samples


def test_run_problems_are_none_unless_allowed_and_nan() -> None:
    report = samples.run_report()
    assert [(p.site, p.variable, p.kind) for p in report.problems] == [
        ("train.py:12", "patch", "unexpected-none"),
        ("model.py:40", "d/kernel", "nan"),
    ]
    assert "cut at x[:2, :2].assign(patch) (ResourceStridedSliceAssign) at train.py:9" in (
        report.problems[0].message
    )
    assert report.exit_code == 1


@pytest.mark.parametrize(
    ("outcome", "code"),
    [(rr.FINISHED, 1), (rr.STOPPED, 1), (rr.RAISED, 4), (rr.INTERRUPTED, 130)],
)
def test_run_exit_codes(outcome: str, code: int) -> None:
    assert samples.run_report(outcome).exit_code == code


@pytest.mark.parametrize("fmt", list(RUN_FORMATS))
def test_run_every_format_renders(fmt: Format) -> None:
    text = render(samples.run_report(), fmt, width=80)
    assert text.endswith("\n") and "patch" in text


def test_run_ci_formats_place_problems_at_the_site_line() -> None:
    suites = ET.fromstring(render(samples.run_report(), Format.JUNIT))
    assert suites.get("failures") == "2"
    files = {s.get("name") for s in suites.iter("testsuite")}
    assert files == {"train.py", "model.py"}
    sarif = json.loads(render(samples.run_report(), Format.SARIF))
    lines = sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"]
                   for r in sarif["runs"][0]["results"])  # fmt: skip
    assert lines == [12, 40]
    github = render(samples.run_report(), Format.GITHUB)
    assert "::error file=train.py,line=12,title=gradscope unexpected-none::" in github
    markdown = render(samples.run_report(), Format.MARKDOWN)
    assert "| `patch` | [2,2] | none:assign | - |" in markdown


def test_run_trainable_changed_is_never_trained_or_unexpected_connected() -> None:
    report = samples.trainable_run()
    assert [(p.variable, p.kind) for p in report.problems] == [
        ("base/kernel", "never-trained"), ("head/kernel", "unexpected-connected")]  # fmt: skip
    assert (
        report.problems[0].message
        == f"fit at train.py:23 does not train base/kernel: {report.calls[0].sources[0].note}"
    )
    assert run_policy.problems_of(report.calls, ["base/*"])[0].kind == "unexpected-connected"
    data = json.loads(render(report, Format.JSON))
    assert data["calls"][0]["sources"]["base/kernel"]["trainable_changed"] is True
    plain = json.loads(render(samples.run_report(), Format.JSON))["calls"][0]["sources"]["w"]
    assert "trainable_changed" not in plain


@pytest.mark.parametrize(
    ("fmt", "title"),
    [(Format.TABLE, "gradscope run · train.py --epochs 1 · TensorFlow 2.21.0 · CPU:0"),
     (Format.MARKDOWN, "## gradscope run · `train.py --epochs 1`")],
)  # fmt: skip
def test_run_table_and_markdown_titles(fmt: Format, title: str) -> None:
    text = render(samples.run_report(), fmt, width=80)
    assert text.splitlines()[0] == title
    assert "check" not in text and "spec" not in text


def test_run_replicas_that_disagree_are_a_problem_naming_them() -> None:
    (problem,) = samples.replicated_run().problems
    assert (problem.kind, problem.variable, problem.site) == ("replica-mismatch", "w",
                                                              "train.py:50")  # fmt: skip
    assert "replica 0 ok; replica 1 zero" in problem.message


def test_run_replicas_in_the_table_markdown_and_json() -> None:
    report = samples.replicated_run()
    table = render(report, "table", width=80)
    assert "2 replicas on CPU:0, CPU:1" in table and "sum of 2 replicas" in table
    assert max(len(line) for line in table.splitlines()) <= 80
    row = next(line for line in table.splitlines() if line.startswith("w "))
    assert row.split()[2:7] == ["ok", "1.25e+00", "ok", "1.25e+00", "zero"]
    markdown = render(report, "markdown")
    assert "| source | shape | status | norm | replica 0 | replica 1 | cut at / why |" in markdown
    assert "| `w` | [4,3] | ok | 1.25e+00 | ok 1.25e+00 | zero |  |" in markdown
    data = json.loads(render(report, "json"))
    call = data["calls"][0]
    assert call["target"]["replicas"] == [2.0, 1.0]
    assert call["sources"]["w"]["replicas"] == [
        {"replica": 0, "status": "ok", "norm": 1.25},
        {"replica": 1, "status": "zero", "norm": 0.0},
    ]
    assert data["distribution"] == {"strategy": "mirrored", "replicas": 2,
                                    "devices": ["CPU:0", "CPU:1"]}  # fmt: skip


def test_run_exited_program_exits_4_with_its_status_in_the_report() -> None:
    from dataclasses import replace

    report = replace(samples.run_report(rr.EXITED), exit_status=7)
    assert report.exit_code == 4  # contract section 6: 4, the program did not end normally
    assert render(report, Format.TABLE, width=80).rstrip().endswith(
        "the program exited with status 7")  # fmt: skip
    assert json.loads(render(report, Format.JSON))["exit_status"] == 7


def test_run_stopped_is_a_warning_in_markdown_and_github() -> None:
    markdown = render(samples.stopped(samples.clean_run()), Format.MARKDOWN).splitlines()
    at = markdown.index("> [!WARNING]")
    assert at < markdown.index(next(line for line in markdown if line.startswith("### ")))
    assert markdown[at + 1].startswith("> stopped by --stop at step 2 of train.py:12")
    assert "> [!WARNING]" not in render(samples.clean_run(), Format.MARKDOWN)
    github = render(samples.stopped(samples.clean_run()), Format.GITHUB).splitlines()
    (warning,) = [line for line in github if line.startswith("::warning ")]
    assert "stopped by --stop at step 2 of" in warning and "did not run" in warning
    assert not any(line.startswith("::warning") for line in
                   render(samples.clean_run(), Format.GITHUB).splitlines())  # fmt: skip


def test_run_formats_list_the_findings_in_the_runs_order() -> None:
    """Problems of two files, interleaved (train.py, model.py, then train.py again): JSON,
    SARIF, GitHub annotations and Markdown list them in the run's order, one finding each."""
    base = samples.run_report()
    source = rr.SourceResult("u", "none:disconnected", None, (2,), False)
    again = rr.CallResult("train.py:30", "GradientTape.gradient", rr.EAGER, 1, "train.py:29", 1.0,
                          (source,))  # fmt: skip
    calls = (*base.calls, again)
    report = replace(base, calls=calls, problems=tuple(run_policy.problems_of(calls, ["g/*"])))
    order = [("patch", "unexpected-none"), ("d/kernel", "nan"), ("u", "unexpected-none")]
    assert [(p.variable, p.kind) for p in report.problems] == order
    assert [(f.variable, f.kind) for f in report.findings()] == order
    data = json.loads(render(report, Format.JSON))
    assert [(p["variable"], p["kind"]) for p in data["problems"]] == order
    sarif = json.loads(render(report, Format.SARIF))["runs"][0]["results"]
    assert [(r["properties"]["variable"], r["ruleId"]) for r in sarif] == order
    errors = [x for x in render(report, Format.GITHUB).splitlines() if x.startswith("::error")]
    assert [x.split(",")[0] for x in errors] == [
        "::error file=train.py", "::error file=model.py", "::error file=train.py"]  # fmt: skip
    problems = render(report, Format.MARKDOWN).split("### Problems")[1].split("\n\n")[1]
    items = [x for x in problems.splitlines() if x.startswith("- **")]
    assert [x.split("**")[1] for x in items] == [k for _, k in order]
    assert "patch" in items[0] and "d/kernel" in items[1] and " u " in items[2]
