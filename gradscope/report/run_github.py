"""``gradscope run --format github``: ``check``'s github renderer, on the run as a check."""

from __future__ import annotations

from gradscope.report import github
from gradscope.report.run_check import as_check
from gradscope.results.run import RunReport


def render(report: RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report in ``check``'s github format."""
    return github.render(as_check(report), color=color, width=width)
