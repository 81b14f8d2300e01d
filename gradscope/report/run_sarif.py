"""``gradscope run --format sarif``: ``check``'s sarif renderer, on the run as a check."""

from __future__ import annotations

from gradscope.report import sarif
from gradscope.report.run_check import as_check
from gradscope.results.run import RunReport


def render(report: RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report in ``check``'s sarif format."""
    return sarif.render(as_check(report), color=color, width=width)
