"""Hand-built reports and check results for the TF-free tests of ``check`` and its formats.

The reports are plain data (no TensorFlow ran): they exercise the policy, the baseline and the
renderers on every problem kind. Tests that need real gradients use bare TensorFlow instead.
"""

from __future__ import annotations

import dataclasses

from gradscope._src.analysis.baseline import Baseline, key_of
from gradscope._src.analysis.check import check_reports
from gradscope._src.analysis.policy import find_problems
from gradscope._src.results import report as m
from gradscope._src.results.check import CheckResult
from gradscope._src.results.expect import Expectation, Pattern, Pos
from gradscope._src.results.facts import CutPoint, NumericCheck, VariableFacts

SPEC = "configs/x.yaml"
OTHER = "configs/y.yaml"
CUT = CutPoint("frozen", "StopGradient", "stopped", f"{SPEC}:17")


def variable(name: str, line: int, trainable: bool = True, shape=(3,)) -> VariableFacts:
    return VariableFacts(name, tuple(shape), "float32", trainable, f"{SPEC}:{line}")


def pair(name: str, status: str, norm: float | None = None, cuts=()) -> m.PairResult:
    return m.PairResult(name, status, norm, (3,), False, tuple(cuts))


#: A ``--numeric`` check whose gradient is twice the finite difference.
DIFFERENT = NumericCheck(0.5, 1e-5, 3, 3, 6e-6, "float64", (1,), 2.0, 1.0)


def numeric_pair(name: str, status: str, norm: float, check: NumericCheck) -> m.PairResult:
    """A pair with a ``--numeric`` verdict: ``differs`` for ``DIFFERENT``."""
    from gradscope._src.analysis.numeric import verdict

    return m.PairResult(name, status, norm, (3,), False, (), numeric=verdict(check, ()))


def report(
    losses: list[m.LossResult],
    variables: list[VariableFacts],
    expect: list[Expectation] = (),  # type: ignore[assignment]
    spec: str = SPEC,
) -> m.Report:
    """A report whose problems the real policy found."""
    problems = find_problems(spec, losses, variables, list(expect))
    return m.Report(spec, "x", "2.21.0", "CPU:0", tuple(variables), tuple(losses), tuple(problems))


def expectation(loss: str, none=(), connected=(), line: int = 40) -> Expectation:
    return Expectation(
        loss,
        tuple(Pattern(g, Pos(line, 12)) for g in none),
        tuple(Pattern(g, Pos(line + 1, 16)) for g in connected),
        Pos(line - 1, 3),
    )


def every_kind(numeric: bool = False, replicas: bool = False) -> m.Report:
    """One report with one problem of every kind (``numeric-differs`` only with ``numeric``,
    the ``replica-*`` kinds only with ``replicas``).

    - ``loss_1`` x ``task1/w``: none:stopped at ``frozen``, but ``connected`` -> unexpected-none
    - ``loss_1`` x ``task2/w``: ok, but ``none`` -> unexpected-connected
    - ``loss_2`` x ``body/w``: nan -> nan
    - ``spare``: disconnected everywhere -> never-trained
    - with ``numeric``: ``loss_2`` x ``task1/w``: ok, but its gradient differs from finite
      differences (``--numeric``) -> numeric-differs
    """
    variables = [variable("body/w", 8), variable("task1/w", 9), variable("task2/w", 10),
                 variable("spare", 11)]  # fmt: skip
    loss_1 = m.LossResult(
        "loss_1",
        1.5,
        (
            pair("body/w", m.OK, 0.5),
            pair("task1/w", m.STOPPED, cuts=[CUT]),
            pair("task2/w", m.OK, 0.25),
            pair("spare", m.DISCONNECTED),
        ),
        f"{SPEC}:30",
    )
    loss_2 = m.LossResult(
        "loss_2",
        None,
        (
            pair("body/w", m.NAN, None),
            numeric_pair("task1/w", m.OK, 1.0, DIFFERENT)
            if numeric
            else pair("task1/w", m.OK, 1.0),
            pair("task2/w", m.DISCONNECTED),
            pair("spare", m.DISCONNECTED),
        ),
        f"{SPEC}:31",
    )
    expect = [expectation("loss_1", none=["task2/*"], connected=["task1/*"], line=40)]
    made = report([loss_1, loss_2], variables, expect)
    if not replicas:
        return made
    distributed = tuple(
        m.Problem.problem(loss, name, kind, f"{kind}: {loss} x {name}", (), SPEC, line)
        for loss, name, kind, line in (
            ("loss_1", "body/w", m.REPLICA_MISMATCH, 8),
            ("loss_1", None, m.REPLICA_LOSS_SCALE, 30),
            ("loss_1", "task2/w", m.REPLICA_GRADIENT_DIFFERS, 10),
            (None, "body/w", m.REPLICA_VARIABLES_DIFFER, 8),
        )
    )
    return dataclasses.replace(made, problems=made.problems + distributed)


def clean(spec: str = OTHER) -> m.Report:
    """A report without problems."""
    variables = [variable("w", 5)]
    loss = m.LossResult("loss", 2.0, (pair("w", m.OK, 1.0),), f"{spec}:9")
    return report([loss], variables, [expectation("loss", connected=["w"])], spec=spec)


def result(*reports: m.Report, known: int = 0) -> CheckResult:
    """A check result; the first ``known`` problems are held by a baseline."""
    reports = reports or (every_kind(),)
    if not known:
        return check_reports(reports)
    keys = [key_of(p) for r in reports for p in r.problems][:known]
    return check_reports(reports, Baseline("baseline.json", frozenset(keys)))
