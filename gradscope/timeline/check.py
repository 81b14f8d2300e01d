"""``check --timeline``: a timeline's findings as a report, so every check format renders them.

A small adapter, no new renderer: the timeline becomes one :class:`~gradscope.results.report.Report`
whose "spec" is the timeline file, with one loss per site (the statuses and norms of its last
recorded step) and one problem per finding. A problem's kind is the finding's (``dead``,
``vanishing``, ``exploding``, ``nan``, ``none``); it points at the site's ``FILE:LINE`` (the
user's ``fit(...)`` or ``tape.gradient(...)`` line), where annotations belong.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar

from gradscope.analysis.check import CheckResult
from gradscope.errors import UsageError
from gradscope.results import report as m
from gradscope.results.cut import CutPoint
from gradscope.results.facts import VariableFacts
from gradscope.results.status import FindingKind, ProblemKind, Status

W = TypeVar("W", bound=Enum)


def report(timeline: Mapping[str, Any], path: str) -> m.Report:
    """The report of a timeline file: its sites as losses, its findings as problems."""
    last: dict[str, Mapping[str, Any]] = {}
    for record in timeline.get("steps", []):
        if record["site"] not in last or record["step"] >= last[record["site"]]["step"]:
            last[record["site"]] = record
    losses = tuple(_loss(site, record) for site, record in last.items())
    shapes = {n: v.get("shape", ()) for r in last.values() for n, v in r["variables"].items()}
    variables = tuple(VariableFacts(n, tuple(shape), "", False, "") for n, shape in shapes.items())
    problems = tuple(_problem(f, path) for f in timeline.get("findings", []))
    return m.Report(
        spec=path,
        name=timeline.get("program"),
        tensorflow=str(timeline.get("tensorflow") or "?"),
        device=str(timeline.get("device") or "?"),
        variables=variables,
        losses=losses,
        problems=problems,
    )


def _loss(site: str, record: Mapping[str, Any]) -> m.LossResult:
    pairs = tuple(
        m.PairResult(
            name,
            _word(Status, v["status"]),
            v.get("norm"),
            tuple(v.get("shape", ())),
            bool(v.get("sparse")),
        )
        for name, v in record["variables"].items()
    )
    return m.LossResult(
        site,
        record.get("loss"),
        pairs,
        source=site,
        notes=(f"statuses of step {record['step']}, the last recorded",),
    )


def _problem(finding: Mapping[str, Any], path: str) -> m.Problem:
    site = str(finding.get("site", ""))
    file, _, line = site.rpartition(":")
    located = bool(file) and line.isdigit()
    return m.Problem(
        loss=site,
        variable=finding.get("variable"),
        kind=_kind(finding["kind"]),
        message=str(finding["message"]),
        cut_points=tuple(
            CutPoint(str(c["node"]), str(c["op"]), str(c["kind"]), str(c["source"]))
            for c in finding.get("cut_points", ())
        ),
        spec=file if located else path,
        line=int(line) if located else 1,
    )


def with_timelines(
    result: CheckResult | None, timelines: Mapping[str, Mapping[str, Any]]
) -> CheckResult:
    """``result`` (the specs' check, or None) with one more report per timeline (path -> JSON)."""
    reports = tuple(report(timeline, path) for path, timeline in timelines.items())
    if result is None:
        return CheckResult(reports)
    return CheckResult(result.reports + reports, result.baseline, result.fixed)


def _word(kind: type[W], value: Any) -> W:
    """A status or finding kind read from a timeline file; another word is a bad file."""
    try:
        return kind(str(value))
    except ValueError:
        known = ", ".join(str(k.value) for k in kind)
        raise UsageError(f"the timeline holds {value!r} where one of {known} belongs") from None


def _kind(value: Any) -> ProblemKind | FindingKind:
    """A finding's kind: ``nan`` is the check's own kind, the others the timeline's."""
    return ProblemKind.NAN if value == "nan" else _word(FindingKind, value)
