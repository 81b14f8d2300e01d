"""Every ``gradscope run`` format renders a hand-made report (no TensorFlow)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradscope.analysis import run as run_policy
from gradscope.report import RUN_FORMATS, Format, render
from gradscope.results import run as rr
from gradscope.results.facts import CutPoint

CUT = CutPoint("x[:2, :2].assign(patch)", "ResourceStridedSliceAssign", "assign", "train.py:9")


def _report(outcome: str = rr.STOPPED) -> rr.RunReport:
    calls = (
        rr.CallResult(
            "train.py:12", "GradientTape.gradient", rr.EAGER, 1, "train.py:11", 2.5,
            (rr.SourceResult("w", "ok", 0.5, (2, 3), False),
             rr.SourceResult("patch", "none:assign", None, (2, 2), False, (CUT,)),
             rr.SourceResult("g/kernel", "none:disconnected", None, (4, 8), False,
                             note="used only through train.py:5 (MatMul), run while the "
                                  "tape was not recording")),
        ),
        rr.CallResult("model.py:40", "fit", rr.FUNCTION, 1, "model.py:40", 0.25,
                      (rr.SourceResult("d/kernel", "nan", None, (3, 1), False),), (),
                      loss_scale=32768.0),
    )  # fmt: skip
    stop = rr.Stop("train.py:12", ("train.py:12", "model.py:40")) if outcome == rr.STOPPED else None
    return rr.RunReport("train.py", ("train.py", "--epochs", "1"), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, ["g/*"])), outcome,
                        stop=stop)  # fmt: skip


def test_run_problems_are_none_unless_allowed_and_nan() -> None:
    report = _report()
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
    assert _report(outcome).exit_code == code


@pytest.mark.parametrize("fmt", list(RUN_FORMATS))
def test_run_every_format_renders(fmt: Format) -> None:
    text = render(_report(), fmt, width=80)
    assert text.endswith("\n") and "patch" in text


def test_run_table_fits_80_columns_and_names_the_cut() -> None:
    text = render(_report(), Format.TABLE, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())  # rich wraps long lines at 80 columns
    assert "train.py:12 · GradientTape.gradient (eager) · step 1" in flat
    assert "loss scale 3.28e+04 (norms unscaled)" in flat
    assert "ResourceStridedSliceAssign" in flat
    assert (
        "stopped by --stop at step 2 of train.py:12 (--steps 1): the rest of the program "
        "did not run, so nothing in it was watched · call sites seen: train.py:12, model.py:40"
    ) in flat


def test_run_json_is_the_contract_shape() -> None:
    data = json.loads(render(_report(), Format.JSON))
    call = data["calls"][0]
    assert call["target"] == {"source": "train.py:11", "value": 2.5}
    assert call["sources"]["patch"]["cut_points"][0]["kind"] == "assign"
    assert data["calls"][1]["target"]["loss_scale"] == 32768.0
    assert data["problems"][1] == {"site": "model.py:40", "step": 1, "variable": "d/kernel",
                                   "kind": "nan", "message": data["problems"][1]["message"],
                                   "cut_points": []}  # fmt: skip


def test_run_ci_formats_place_problems_at_the_site_line() -> None:
    suites = ET.fromstring(render(_report(), Format.JUNIT))
    assert suites.get("failures") == "2"
    files = {s.get("name") for s in suites.iter("testsuite")}
    assert files == {"train.py", "model.py"}
    sarif = json.loads(render(_report(), Format.SARIF))
    lines = sorted(r["locations"][0]["physicalLocation"]["region"]["startLine"]
                   for r in sarif["runs"][0]["results"])  # fmt: skip
    assert lines == [12, 40]
    github = render(_report(), Format.GITHUB)
    assert "::error file=train.py,line=12,title=gradscope unexpected-none::" in github
    markdown = render(_report(), Format.MARKDOWN)
    assert "| `patch` | [2,2] | none:assign | - |" in markdown


def _trainable_report() -> rr.RunReport:
    """A fit() whose traced train step leaves an unfrozen layer out and trains a frozen one."""
    note = "made trainable after the train step was traced at train.py:19, which leaves it out"
    calls = (
        rr.CallResult("train.py:23", "fit", rr.FUNCTION, 1, "", None, (
            rr.SourceResult("base/kernel", "excluded", None, (4, 8), False, (), note, True),
            rr.SourceResult("head/kernel", "ok", None, (8, 1), False, (), "frozen after", True),
        ), ("this fit() reuses the train step traced at train.py:19",)),
    )  # fmt: skip
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, ())))  # fmt: skip


def test_run_trainable_changed_is_never_trained_or_unexpected_connected() -> None:
    report = _trainable_report()
    assert [(p.variable, p.kind) for p in report.problems] == [
        ("base/kernel", "never-trained"), ("head/kernel", "unexpected-connected")]  # fmt: skip
    assert (
        report.problems[0].message
        == f"fit at train.py:23 does not train base/kernel: {report.calls[0].sources[0].note}"
    )
    assert run_policy.problems_of(report.calls, ["base/*"])[0].kind == "unexpected-connected"
    data = json.loads(render(report, Format.JSON))
    assert data["calls"][0]["sources"]["base/kernel"]["trainable_changed"] is True
    assert "trainable_changed" not in json.loads(render(_report(), Format.JSON))["calls"][0][
        "sources"]["w"]  # fmt: skip


@pytest.mark.parametrize("report", [_report, _trainable_report])
def test_run_junit_is_titled_by_the_run_and_valid_junit_10(report) -> None:
    import xmlschema

    text = render(report(), Format.JUNIT)
    xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "jenkins-junit-10.xsd")).validate(
        text.encode("utf-8")
    )
    suites = ET.fromstring(text.encode("utf-8"))
    assert suites.get("name") == f"gradscope run {' '.join(report().argv)}"
    assert "check" not in text and "spec" not in text


def test_run_sarif_has_the_runs_rules_and_command_line() -> None:
    log = json.loads(render(_trainable_report(), Format.SARIF))
    (run,) = log["runs"]
    assert run["automationDetails"]["id"] == "gradscope/run/"
    assert run["invocations"][0]["commandLine"] == "gradscope run train.py"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == [
        "unexpected-none", "nan", "never-trained", "unexpected-connected",
        "replica-mismatch"]  # fmt: skip
    assert not any("spec" in json.dumps(r) for r in rules)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["never-trained", "unexpected-connected"]
    assert [rules[r["ruleIndex"]]["id"] for r in results] == [r["ruleId"] for r in results]
    assert {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results} == {23}


def test_run_github_group_and_verdict_name_the_run_and_its_call_sites() -> None:
    lines = render(_report(), Format.GITHUB).splitlines()
    assert lines[0] == "::group::gradscope run train.py --epochs 1: 2 calls at 2 call sites"
    assert (
        lines[1] == "train.py:12 · GradientTape.gradient (eager) · step 1: 3 sources: 1 ok, 2 none"
    )
    assert lines[-1].startswith("gradscope run train.py --epochs 1: 2 call(s) at 2 site(s)")
    assert lines[-1].endswith("(exit code 1)")
    assert not any("check" in line or "spec" in line for line in lines)
    notes = render(_trainable_report(), Format.GITHUB).splitlines()
    assert "::notice title=gradscope note%3A train.py%3A23::this fit() reuses" in "\n".join(notes)


@pytest.mark.parametrize(
    ("fmt", "title"),
    [(Format.TABLE, "gradscope run · train.py --epochs 1 · TensorFlow 2.21.0 · CPU:0"),
     (Format.MARKDOWN, "## gradscope run · `train.py --epochs 1`")],
)  # fmt: skip
def test_run_table_and_markdown_titles(fmt: Format, title: str) -> None:
    text = render(_report(), fmt, width=80)
    assert text.splitlines()[0] == title
    assert "check" not in text and "spec" not in text


def _replicated() -> rr.RunReport:
    """A call made inside ``strategy.run`` on 2 replicas: replica 1's ``w`` gradient is 0."""
    from gradscope.results.replicas import Distribution, ReplicaResult
    from gradscope.results.status import Status

    each = (ReplicaResult(0, Status.OK, 1.25), ReplicaResult(1, Status.ZERO, 0.0))
    both = (ReplicaResult(0, Status.OK, 0.5), ReplicaResult(1, Status.OK, 0.75))
    calls = (
        rr.CallResult("train.py:50", "GradientTape.gradient", rr.FUNCTION, 1, "train.py:34",
                      3.0, (rr.SourceResult("w", Status.OK, 1.25, (4, 3), False, replicas=each),
                            rr.SourceResult("b", Status.OK, 1.1, (3,), False, replicas=both)),
                      replica_values=(2.0, 1.0)),
    )  # fmt: skip
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, [])),
                        distribution=Distribution("mirrored", 2),
                        devices=("CPU:0", "CPU:1"))  # fmt: skip


def test_run_replicas_that_disagree_are_a_problem_naming_them() -> None:
    (problem,) = _replicated().problems
    assert (problem.kind, problem.variable, problem.site) == ("replica-mismatch", "w",
                                                              "train.py:50")  # fmt: skip
    assert "replica 0 ok; replica 1 zero" in problem.message


def test_run_replicas_in_the_table_markdown_and_json() -> None:
    report = _replicated()
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

    report = replace(_report(rr.EXITED), exit_status=7)
    assert report.exit_code == 4  # contract section 6: 4, the program did not end normally
    assert render(report, Format.TABLE, width=80).rstrip().endswith(
        "the program exited with status 7")  # fmt: skip
    assert json.loads(render(report, Format.JSON))["exit_status"] == 7


def _stopped(report: rr.RunReport) -> rr.RunReport:
    """``report`` as ``--stop`` ends it: stopped at its first call's site, at step 2."""
    from dataclasses import replace

    first = report.calls[0].site
    return replace(report, outcome=rr.STOPPED, stop=rr.Stop(first, (first,)))


def _clean() -> rr.RunReport:
    """A run whose one watched call has no problem: a pass, if it ran to its end."""
    calls = (rr.CallResult("train.py:12", "GradientTape.gradient", rr.EAGER, 1, "train.py:11",
                           2.5, (rr.SourceResult("w", "ok", 0.5, (2, 3), False),)),)  # fmt: skip
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls, (), rr.FINISHED)


@pytest.mark.parametrize("make", [_clean, _trainable_report])
def test_run_stopped_is_a_skipped_case_in_junit_never_a_plain_pass(make) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "jenkins-junit-10.xsd"))
    finished, stopped = render(make(), Format.JUNIT), render(_stopped(make()), Format.JUNIT)
    for text in (finished, stopped):
        schema.validate(text.encode("utf-8"))  # the skipped case sits before a suite's notes
    assert "<skipped" not in finished
    suites = ET.fromstring(stopped.encode("utf-8"))
    (case,) = [c for c in suites.iter("testcase") if c.find("skipped") is not None]
    (suite,) = [s for s in suites.iter("testsuite") if case in list(s)]
    assert (suite.get("name"), suite.get("skipped")) == ("train.py", "1")
    assert case.get("name") == "the rest of the program (not run: stopped by --stop)"
    message = case.find("skipped").get("message")  # type: ignore[union-attr]
    assert message.startswith("stopped by --stop at step 2 of train.py:")
    assert "the rest of the program did not run, so nothing in it was watched" in message
    # everything else is as it was: the same cases, outcomes and counts
    assert len(list(suites.iter("testcase"))) == len(
        list(ET.fromstring(finished.encode("utf-8")).iter("testcase"))) + 1  # fmt: skip


def test_run_stopped_is_a_warning_in_sarif() -> None:
    def notifications(report: rr.RunReport) -> list[dict]:
        (run,) = json.loads(render(report, Format.SARIF))["runs"]
        return run["invocations"][0]["toolExecutionNotifications"]

    assert notifications(_clean()) == []
    (stop,) = notifications(_stopped(_clean()))
    assert (stop["level"], stop["descriptor"]) == ("warning", {"id": "stopped"})
    assert stop["message"]["text"].startswith("gradscope run: stopped by --stop at step 2 of")
    notes = notifications(_trainable_report())
    assert notifications(_stopped(_trainable_report()))[1:] == notes  # the notes stay


def test_run_stopped_is_a_warning_in_markdown_and_github() -> None:
    markdown = render(_stopped(_clean()), Format.MARKDOWN).splitlines()
    at = markdown.index("> [!WARNING]")
    assert at < markdown.index(next(line for line in markdown if line.startswith("### ")))
    assert markdown[at + 1].startswith("> stopped by --stop at step 2 of train.py:12")
    assert "> [!WARNING]" not in render(_clean(), Format.MARKDOWN)
    github = render(_stopped(_clean()), Format.GITHUB).splitlines()
    (warning,) = [line for line in github if line.startswith("::warning ")]
    assert "stopped by --stop at step 2 of" in warning and "did not run" in warning
    assert not any(line.startswith("::warning") for line in
                   render(_clean(), Format.GITHUB).splitlines())  # fmt: skip
