"""``check --timeline``: a timeline file read into a typed result, so every check format
renders its findings.

No new renderer: the timeline becomes a
:class:`~gradscope._src.results.timeline.TimelineResult` (plain data, its findings
:class:`~gradscope._src.results.finding.Finding` objects read as every result's are,
``Finding.from_dict``), whose report is one :class:`~gradscope.Report` whose "spec" is the
timeline file, with one loss per site (the statuses and norms of its last recorded step; a
variable that site does not watch is ``excluded``, outside its sources) and one problem per
finding: its kind (``dead``, ``vanishing``, ``exploding``, ``none``, or a run's ``nan``,
``unexpected-none``, ...), message, cut points and fix, at the site's ``FILE:LINE`` (the
user's ``fit(...)`` or ``tape.gradient(...)`` line), where annotations belong. So the findings
of a run and of ``check --timeline`` on its timeline are the same.

The findings are the file's and those its records show: the steps are read again with the
file's own ``thresholds`` (the defaults when it has none), so a timeline whose ``findings`` list
was emptied or cut short still fails on the NaN, exploding, dead, vanishing or missing gradients
its records hold. A finding the file already has is kept as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradscope._src.analysis.baseline import load_baseline
from gradscope._src.analysis.check import check_reports
from gradscope._src.results import report as m
from gradscope._src.results.check import CheckResult
from gradscope._src.results.facts import VariableFacts
from gradscope._src.results.finding import Finding
from gradscope._src.results.status import Status
from gradscope._src.results.timeline import TimelineResult
from gradscope._src.timeline.findings import Thresholds, find
from gradscope._src.timeline.reader import THRESHOLDS


def checked(timeline: Mapping[str, Any], path: str) -> TimelineResult:
    """A timeline (as :func:`~gradscope._src.timeline.reader.load` returns it), checked: its
    sites as losses, its findings and those its records show as findings."""
    last: dict[str, Mapping[str, Any]] = {}
    for record in timeline["steps"]:
        if record["site"] not in last or record["step"] >= last[record["site"]]["step"]:
            last[record["site"]] = record
    shapes: dict[str, tuple[int, ...]] = {}
    for record in last.values():
        for name, v in record["variables"].items():
            shapes.setdefault(name, tuple(v.get("shape", ())))
    found, derived = all_findings(timeline)
    return TimelineResult(
        path=path,
        program=timeline.get("program"),
        tensorflow=str(timeline.get("tensorflow") or "?"),
        device=str(timeline.get("device") or "?"),
        sites=tuple(_loss(site, record, shapes) for site, record in last.items()),
        variables=tuple(VariableFacts(n, shape, "", False, "") for n, shape in shapes.items()),
        found=tuple(Finding.from_dict(f, path) for f in found),
        derived=derived,
    )


def report(timeline: Mapping[str, Any], path: str) -> m.Report:
    """The report of a timeline, which every ``check`` format draws (:func:`checked`)."""
    return checked(timeline, path).report()


def all_findings(timeline: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """The file's findings, then those its steps show that the file lacks (read with the
    file's thresholds), and how many of those there are."""
    written = list(timeline.get("findings", []))
    held = {(f["kind"], f["site"], f["variable"]) for f in written}
    found = find(timeline["steps"], thresholds_of(timeline))
    more = [f for f in found if (f["kind"], f["site"], f["variable"]) not in held]
    return written + more, len(more)


def thresholds_of(timeline: Mapping[str, Any]) -> Thresholds:
    """The thresholds the timeline was recorded with; the defaults for those it lacks."""
    given = timeline.get("thresholds") or {}
    return Thresholds(**{k: kind(given[k]) for k, kind in THRESHOLDS.items() if k in given})


def _loss(
    site: str, record: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]
) -> m.LossResult:
    """One site's last record, with a pair for every variable of the report (a report's
    renderers read a full loss x variable matrix)."""
    watched = record["variables"]
    pairs = tuple(
        m.PairResult(
            name,
            Status(watched[name]["status"]),
            watched[name].get("norm"),
            tuple(watched[name].get("shape", ())),
            bool(watched[name].get("sparse")),
        )
        if name in watched
        else m.PairResult(name, Status.EXCLUDED, None, shape, False)
        for name, shape in shapes.items()
    )
    notes = [f"statuses of step {record['step']}, the last recorded"]
    unasked = [name for name in shapes if name not in watched]
    if unasked:
        them = "it" if len(unasked) == 1 else "them"
        notes.append(f"excluded: {', '.join(unasked)} (this call asks no gradient for {them})")
    return m.LossResult(site, record.get("loss"), pairs, source=site, notes=tuple(notes))


def with_timelines(
    result: CheckResult | None,
    timelines: Mapping[str, Mapping[str, Any]],
    baseline: str | None = None,
) -> CheckResult:
    """``result`` (the specs' check, or None) with one more report per timeline (path -> JSON),
    held to ``baseline`` as the specs are: a finding the baseline holds is known, not a failure.

    Raises:
        UsageError: an unreadable baseline.
    """
    reports = [checked(timeline, path).report() for path, timeline in timelines.items()]
    held = check_reports(reports, load_baseline(baseline) if baseline else None)
    if result is None:
        return held
    fixed = tuple(sorted(result.fixed + held.fixed, key=lambda k: (k[0], k[1] or "", k[2] or "")))
    return CheckResult(result.reports + held.reports, result.baseline or held.baseline, fixed)
