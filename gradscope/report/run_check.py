"""``gradscope run`` for CI formats: the run as a ``CheckResult``, so the JUnit, SARIF and
GitHub renderers of ``check`` draw it unchanged.

Each file holding a call site becomes one report (its ``spec``); each watched call one loss,
named ``API at line N (step S)``; each of the run's problems a problem at the site's line.
"""

from __future__ import annotations

from gradscope.results import report as m
from gradscope.results import run as rr
from gradscope.results.check import CheckResult
from gradscope.results.location import Location, line_of


def title(report: rr.RunReport) -> str:
    """``gradscope run train.py --epochs 1``: the command that made the report (a
    ``gradscope.watch()`` block: ``gradscope.watch() at FILE:LINE``)."""
    if report.entry == rr.WATCH:
        return f"gradscope.watch() at {report.program}"
    return " ".join(["gradscope run", report.program, *report.argv[1:]])


def label(call: rr.CallResult) -> str:
    """The loss name a call takes in check formats (its file is the report's)."""
    return f"{call.api} at line {line_of(call.site)} (step {call.step})"


def file_of(site: str) -> str:
    """The file of a ``FILE:LINE`` call site: the check report (suite) it belongs to."""
    found = Location.parse(site)
    return found.file if found is not None else site


def as_check(report: rr.RunReport) -> CheckResult:
    """The run as one check report per file that holds a call site."""
    by_file: dict[str, list[rr.CallResult]] = {}
    for call in report.calls:
        by_file.setdefault(file_of(call.site), []).append(call)
    labels = {(c.site, c.step): label(c) for c in report.calls}
    reports = []
    for path, calls in by_file.items():
        losses = tuple(
            m.LossResult(label(c), c.value, tuple(_pair(s) for s in c.sources), c.site, c.notes)
            for c in calls
        )
        problems = tuple(
            m.Problem(
                labels.get((p.site, p.step)),
                p.variable,
                p.kind,
                p.message,
                p.cut_points,
                spec=path,
                line=line_of(p.site),
                fix=p.fix,
            )
            for p in report.problems
            if file_of(p.site) == path
        )
        reports.append(m.Report(path, " ".join(report.argv), report.tensorflow, report.device,
                                (), losses, problems))  # fmt: skip
    return CheckResult(tuple(reports))


def _pair(source: rr.SourceResult) -> m.PairResult:
    return m.PairResult(source.name, source.status, source.norm, source.shape, source.sparse,
                        source.cut_points, fix=source.fix)  # fmt: skip
