"""``gradscope run --format junit``: ``check``'s junit renderer, on the run as a check, under
the run's own title."""

from __future__ import annotations

from gradscope.report import junit
from gradscope.report.run_check import as_check, title
from gradscope.results.run import RunReport


def render(report: RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report in ``check``'s junit format, its ``<testsuites>`` named
    ``gradscope run train.py ...``: one suite per file holding a call site, one test case
    per call and source."""
    return junit.render(as_check(report), title=title(report))
