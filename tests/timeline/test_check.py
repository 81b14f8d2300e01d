"""``check --timeline`` reads a timeline's findings as every result gives them (no TensorFlow)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from gradscope._src.analysis import run as run_policy
from gradscope._src.report.github import annotation
from gradscope._src.results import run as rr
from gradscope._src.results.facts import CutPoint
from gradscope._src.results.fix import Fix
from gradscope._src.timeline import check
from gradscope._src.timeline.reader import load
from gradscope._src.timeline.record import Recorder

CUT = CutPoint("x[:2, :2].assign(patch)", "ResourceStridedSliceAssign", "assign", "train.py:9")


def _run() -> rr.RunReport:
    """A run with an ``unexpected-none`` (a cut point, a fix) at one file and a ``nan`` at
    another, as ``gradscope run`` reports them."""
    calls = (
        rr.CallResult("train.py:12", "GradientTape.gradient", rr.EAGER, 1, "train.py:11", 2.5,
                      (rr.SourceResult("w", "ok", 0.5, (2, 3), False),
                       rr.SourceResult("patch", "none:assign", None, (2, 2), False, (CUT,)))),
        rr.CallResult("model.py:40", "fit", rr.FUNCTION, 3, "model.py:40", 0.25,
                      (rr.SourceResult("d/kernel", "nan", None, (3, 1), False),)),
    )  # fmt: skip
    problems = run_policy.problems_of(calls, [])
    fix = Fix("remove-assign", "train.py:9", "Write the patch with tf.tensor_scatter_nd_update.")
    problems[0] = dataclasses.replace(problems[0], fix=fix)
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls, tuple(problems))


def test_check_timeline_findings_are_the_runs(tmp_path: Path) -> None:
    run = _run()
    recorder = Recorder(program="train.py")
    recorder.keep([p.to_dict() for p in run.problems])  # what `gradscope run --timeline` does
    path = tmp_path / "t.json"
    path.write_text(json.dumps(recorder.close()))
    checked = check.report(load(str(path)), str(path)).findings()

    def seen(findings):  # what every format shows of a finding, besides what it is about
        return [(f.kind, f.location, f.message, f.cut_points, f.fix, f.variable) for f in findings]

    assert len(run.findings()) == 2 and run.findings()[0].fix is not None
    assert seen(checked) == seen(run.findings())
    assert [annotation(f) for f in checked] == [annotation(f) for f in run.findings()]
    # a timeline's finding is about its site (the timeline's losses are sites)
    assert [f.loss for f in checked] == ["train.py:12", "model.py:40"]
    assert {f.report for f in checked} == {str(path)}


def test_check_timeline_is_plain_data_whose_findings_are_findings(tmp_path: Path) -> None:
    """A checked timeline is frozen data in results/ (as a check's result is): its findings
    are ``Finding`` objects, the file's then those its records show (a NaN the emptied
    ``findings`` list lost), and its report, which the formats draw, gives the same."""
    from gradscope._src.results.finding import Finding
    from gradscope._src.results.timeline import TimelineResult

    nan = {"status": "nan", "norm": None, "weight_norm": 1.0, "zero_fraction": 0.0}
    timeline = {
        "gradscope": 1, "program": "train.py",
        "steps": [{"step": 1, "site": "train.py:5", "variables": {"w": nan}}],
        "findings": [],
    }  # fmt: skip
    result = check.checked(timeline, "t.json")
    assert isinstance(result, TimelineResult)
    assert dataclasses.is_dataclass(result)
    try:
        result.path = "other.json"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a timeline result is frozen")
    (finding,) = result.findings()
    assert isinstance(finding, Finding)
    assert (finding.kind, str(finding.location), finding.variable) == ("nan", "train.py:5", "w")
    assert result.derived == 1
    assert result.notes() == (
        "1 finding read from the recorded steps, missing from the file's `findings`",)  # fmt: skip
    report = result.report()
    assert report.spec == "t.json" and report.notes == result.notes()
    assert [(f.kind, f.location, f.message) for f in report.findings()] == [
        (finding.kind, finding.location, finding.message)]  # fmt: skip


def test_timeline_findings_in_a_notebook_are_findings() -> None:
    """``gradscope.plot``'s findings are drawn from ``Finding`` objects as every result's:
    the step each holds from, its cut at the one cut text, its fix in the fix column."""
    from gradscope._src.report.notebook import timeline_html, timeline_text
    from gradscope._src.results.finding import Finding

    fix = {"kind": "remove-assign", "where": "train.py:9", "text": "Use a copy."}
    row = {"kind": "none", "site": "train.py:9", "variable": "d/kernel", "from_step": 4,
           "message": "d/kernel: no gradient", "cut_points": [CUT.to_dict()],
           "fix": fix}  # fmt: skip
    finding = Finding.from_dict(row, "train.py")
    assert (finding.step, finding.loss, finding.cut_points) == (4, "train.py:9", (CUT,))
    timeline = {"gradscope": 1, "program": "train.py", "steps": [], "findings": [row]}
    page = timeline_html(timeline, "<svg/>")
    cells = [c.split(">", 1)[1].split("</td>")[0] for c in page.split("<td")[1:]]
    assert cells == [
        "none", "train.py:9", "<code>d/kernel</code>", "4", "d/kernel: no gradient",
        "x[:2, :2].assign(patch) (ResourceStridedSliceAssign) at train.py:9",
    ]  # fmt: skip
    assert page.count("Use a copy.") == 1 and "fix (d/kernel): Use a copy." in page
    assert timeline_text(timeline).splitlines()[1:] == ["none: d/kernel: no gradient", "1 finding"]
