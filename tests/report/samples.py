"""Hand-made results every format test draws (no TensorFlow): an inspect report, checks,
a diff and its matrix, runs."""

from __future__ import annotations

from gradscope._src.analysis import run as run_policy
from gradscope._src.analysis.diff import compare, matrix
from gradscope._src.results import causes
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.results.facts import Comparison, CutPoint, VariableFacts
from tests import checks


def inspect_report() -> m.Report:
    cut = CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17")
    variables = (
        VariableFacts("body/w", (4, 16), "float32", True, "configs/x.yaml:8"),
        VariableFacts("spare", (3,), "float32", True, "configs/x.yaml:9"),
    )
    loss = m.LossResult(
        "loss_5",
        1.5,
        (
            m.PairResult("body/w", m.STOPPED, None, (4, 16), False, (cut,)),
            m.PairResult("spare", m.DISCONNECTED, None, (3,), False),
        ),
    )
    problem = m.Problem.problem(
        None,
        "spare",
        m.NEVER_TRAINED,
        "`spare` is trainable but no loss gives it a gradient",
        (),
        "configs/x.yaml",
        9,
    )
    return m.Report("configs/x.yaml", "x", "2.21.0", "CPU:0", variables, (loss,), (problem,))


CHECKS = {
    "failing": lambda: checks.result(checks.every_kind()),
    "several": lambda: checks.result(checks.every_kind(), checks.clean()),
    "known": lambda: checks.result(checks.every_kind(), checks.clean(), known=2),
    "passing": lambda: checks.result(checks.clean()),
}


STOP = CutPoint("head1_frozen", "StopGradient", "stopped", "configs/x.yaml:31")


def _cuts(status: str) -> tuple[CutPoint, ...]:
    return (STOP,) if status == m.STOPPED else ()


def diff_base(losses: dict[str, list[tuple[str, str, float | None]]]) -> m.Report:
    names = [v for v, _, _ in next(iter(losses.values()))]
    variables = tuple(VariableFacts(n, (3, 4), "float32", True, "configs/x.yaml:9") for n in names)
    results = []
    for loss, rows in losses.items():
        sparse = loss != "loss2"  # embedding: IndexedSlices under every loss but loss2
        pairs = tuple(
            m.PairResult(v, s, n, (3, 4), v == "embedding" and sparse, _cuts(s)) for v, s, n in rows
        )
        results.append(m.LossResult(loss, 2.5, pairs))
    return m.Report("configs/x.yaml", "x", "2.21.0", "CPU:0", variables, tuple(results))


def diff() -> DiffReport:
    report = diff_base(
        {
            "loss1": [("embedding", m.OK, 1.0), ("output1", m.OK, 2.0), ("output2", m.DISCONNECTED,
                      None)],
            "loss2": [("embedding", m.OK, 2.0), ("output1", m.STOPPED, None), ("output2", m.OK,
                      1.0)],
        }
    )  # fmt: skip
    one = {"embedding": 1.0}
    cmp = Comparison(
        "loss1", "loss2", {"embedding": -1.5}, {"embedding": 0.25}, one, {"embedding": 4.0}
    )
    return DiffReport(report, compare(report, cmp))


def diff_matrix() -> DiffMatrix:
    report = diff_base(
        {
            "head1": [("embedding", m.OK, 1.0)],
            "head2": [("embedding", m.OK, 1.0)],
            "head3": [("embedding", m.DISCONNECTED, None)],
        }
    )
    one = {"embedding": 1.0}
    return matrix(report, [Comparison("head1", "head2", {"embedding": -0.75}, one, one, one),
                           Comparison("head1", "head3"), Comparison("head2", "head3")])  # fmt: skip


CUT = CutPoint("x[:2, :2].assign(patch)", "ResourceStridedSliceAssign", "assign", "train.py:9")


def run_report(outcome: str = rr.STOPPED) -> rr.RunReport:
    calls = (
        rr.CallResult(
            "train.py:12", "GradientTape.gradient", rr.EAGER, 1, "train.py:11", 2.5,
            (rr.SourceResult("w", "ok", 0.5, (2, 3), False),
             rr.SourceResult("patch", "none:assign", None, (2, 2), False, (CUT,)),
             rr.SourceResult("g/kernel", "none:disconnected", None, (4, 8), False,
                             cause=causes.OutsideTape(line="train.py:5", op="MatMul"))),
        ),
        rr.CallResult("model.py:40", "fit", rr.FUNCTION, 1, "model.py:40", 0.25,
                      (rr.SourceResult("d/kernel", "nan", None, (3, 1), False),), (),
                      loss_scale=32768.0),
    )  # fmt: skip
    stop = rr.Stop("train.py:12", ("train.py:12", "model.py:40")) if outcome == rr.STOPPED else None
    return rr.RunReport("train.py", ("train.py", "--epochs", "1"), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, ["g/*"])), outcome,
                        stop=stop)  # fmt: skip


def trainable_run() -> rr.RunReport:
    """A fit() whose traced train step leaves an unfrozen layer out and trains a frozen one."""
    left_out = causes.ChangedAfterTrace(line="train.py:19")
    trained = causes.ChangedAfterTrace(line="train.py:19", trained=True)
    calls = (
        rr.CallResult("train.py:23", "fit", rr.FUNCTION, 1, "", None, (
            rr.SourceResult("base/kernel", "excluded", None, (4, 8), False, (), left_out, True),
            rr.SourceResult("head/kernel", "ok", None, (8, 1), False, (), trained, True),
        ), ("this fit() reuses the train step traced at train.py:19",)),
    )  # fmt: skip
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, ())))  # fmt: skip


def replicated_run() -> rr.RunReport:
    """A call made inside ``strategy.run`` on 2 replicas: replica 1's ``w`` gradient is 0."""
    from gradscope._src.results.replicas import Distribution, ReplicaResult
    from gradscope._src.results.status import Status

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


def stopped(report: rr.RunReport) -> rr.RunReport:
    """``report`` as ``--stop`` ends it: stopped at its first call's site, at step 2."""
    from dataclasses import replace

    first = report.calls[0].site
    return replace(report, outcome=rr.STOPPED, stop=rr.Stop(first, (first,)))


def clean_run() -> rr.RunReport:
    """A run whose one watched call has no problem: a pass, if it ran to its end."""
    calls = (rr.CallResult("train.py:12", "GradientTape.gradient", rr.EAGER, 1, "train.py:11",
                           2.5, (rr.SourceResult("w", "ok", 0.5, (2, 3), False),)),)  # fmt: skip
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls, (), rr.FINISHED)
