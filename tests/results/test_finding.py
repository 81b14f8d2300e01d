"""Every result gives its findings as one type: inspect/check reports, runs, timelines."""

from __future__ import annotations

from gradscope._src.analysis import run as run_policy
from gradscope._src.location import Location
from gradscope._src.results import causes
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.facts import CutPoint
from gradscope._src.results.finding import Finding
from gradscope._src.results.status import FindingKind, ProblemKind
from tests import checks

UNREAD = "reaches only output 'aux' of model 'detector', which the loss does not read"
UNREAD_CAUSE = causes.UnreadOutput(names=("aux",), model="detector")


def test_finding_of_a_check_problem_carries_its_pairs_cause() -> None:
    """A disconnected pair whose cause the front-end knew: the policy's problem about that
    variable (the loss's own ``unexpected-none`` when ``expect`` lists it, else the model's
    ``never-trained``) gives it; a problem of another variable has none."""
    variables = [checks.variable("body/w", 8), checks.variable("aux/w", 9)]
    pair = m.PairResult("aux/w", m.DISCONNECTED, None, (3,), False, cause=UNREAD_CAUSE)
    loss = m.LossResult("loss", 1.0, (checks.pair("body/w", m.NAN), pair))
    expected = checks.report([loss], variables, [checks.expectation("loss", connected=["aux/*"])])
    unexpected = {(f.kind, f.variable): f for f in expected.findings()}
    assert set(unexpected) == {(ProblemKind.UNEXPECTED_NONE, "aux/w"), (ProblemKind.NAN, "body/w")}
    assert unexpected[(ProblemKind.UNEXPECTED_NONE, "aux/w")].note == UNREAD
    assert unexpected[(ProblemKind.NAN, "body/w")].cause is None
    (never,) = [f for f in checks.report([loss], variables).findings() if f.variable == "aux/w"]
    assert (never.kind, never.loss, never.note) == (ProblemKind.NEVER_TRAINED, None, UNREAD)
    problem = next(p for p in expected.problems if p.variable == "aux/w")
    found = unexpected[(ProblemKind.UNEXPECTED_NONE, "aux/w")]
    assert found.location == Location(problem.spec, problem.line)
    assert (found.loss, found.message, found.report) == ("loss", problem.message, expected.spec)


def test_finding_of_a_run_problem_is_at_its_site_about_its_call() -> None:
    note = "used only through train.py:5 (MatMul), run while the tape was not recording"
    outside = causes.OutsideTape(line="train.py:5", op="MatMul")
    cut = CutPoint("frozen", "StopGradient", "stopped", "train.py:9")
    calls = (
        rr.CallResult("train.py:12", "GradientTape.gradient", rr.EAGER, 3, "train.py:11", 2.5,
                      (rr.SourceResult("g/kernel", "none:disconnected", None, (4, 8), False,
                                       cause=outside),
                       rr.SourceResult("w", "none:stopped", None, (2,), False, (cut,)))),
    )  # fmt: skip
    run = rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls,
                       tuple(run_policy.problems_of(calls, ())))  # fmt: skip
    first, second = run.findings()
    assert first == Finding(
        ProblemKind.UNEXPECTED_NONE,
        Location("train.py", 12),
        run.problems[0].message,
        cause=outside,
        loss="GradientTape.gradient at line 12 (step 3)",
        variable="g/kernel",
        report="train.py",
        step=3,  # the call's third execution
    )
    assert first.note == note  # its cause, in the words of the source's note
    assert (second.variable, second.cut_points, second.cause) == ("w", (cut,), None)


def test_finding_from_a_timeline_dict_keeps_its_kind_and_place() -> None:
    dead = Finding.from_dict(
        {"kind": "dead", "site": "train.py:20", "variable": "d/kernel", "message": "m"}, "t.json"
    )
    assert (dead.kind, dead.location, dead.loss, dead.report) == (
        FindingKind.DEAD, Location("train.py", 20), "train.py:20", "t.json")  # fmt: skip
    nan = Finding.from_dict(
        {"kind": "nan", "site": "fit", "variable": "w", "message": "m"}, "t.json"
    )
    assert (nan.kind, nan.location, nan.line) == (ProblemKind.NAN, Location("t.json", 1), 1)
    assert isinstance(dead.kind, FindingKind) and isinstance(nan.kind, ProblemKind)


def test_every_format_reads_the_same_findings_of_a_check() -> None:
    """Known problems stay findings (marked known), in the report's order."""
    result = checks.result(checks.every_kind(), checks.clean(), known=2)
    assert [f.key() for f in result.findings()] == [
        (r.spec, p.loss, p.variable, str(p.kind)) for r in result.reports for p in r.problems
    ]
    assert sum(f.known for f in result.findings()) == 2


def test_every_finding_writes_its_own_results_v1_row() -> None:
    """``Problem.to_dict()`` and ``RunProblem.to_dict()`` (public since v1) keep their keys
    now that both are a Finding; a timeline's row reads back as it was written."""
    cut = CutPoint("m/ArgMax", "ArgMax", "nondifferentiable", "t.py:4")
    problem = m.Problem.problem("loss", "w", "unexpected-none", "w: none", (cut,), "s.yaml", 7)
    assert problem.to_dict() == {
        "loss": "loss", "variable": "w", "kind": "unexpected-none", "message": "w: none",
        "cut_points": [cut.to_dict()], "spec": "s.yaml", "source": "s.yaml:7", "known": False,
    }  # fmt: skip
    ran = rr.RunProblem.run_problem("t.py:9", 2, "w", "nan", "w: nan", via=("main.py:3",))
    assert ran.to_dict() == {
        "site": "t.py:9", "step": 2, "variable": "w", "kind": "nan", "message": "w: nan",
        "cut_points": [], "via": ["main.py:3"],
    }  # fmt: skip
    row = {"kind": "none", "site": "t.py:9", "variable": "w", "from_step": 3,
           "message": "w gets no gradient", "cut_points": [cut.to_dict()]}  # fmt: skip
    assert Finding.from_dict(row, "t.json").to_dict() == row
