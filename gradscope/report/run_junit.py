"""``gradscope run --format junit``: ``check``'s junit renderer, on the run as a check, under
the run's own title."""

from __future__ import annotations

from gradscope.report import junit
from gradscope.report.run_check import as_check, file_of, title
from gradscope.report.run_table import ending
from gradscope.results.run import RunReport

#: The test case a run ``--stop`` stopped adds, skipped: the rest of the program.
NOT_RUN = "the rest of the program (not run: stopped by --stop)"


def render(report: RunReport, *, color: bool = False, width: int = 120) -> str:
    """The run report in ``check``'s junit format, its ``<testsuites>`` named
    ``gradscope run train.py ...``: one suite per file holding a call site, one test case
    per call and source; a run ``--stop`` stopped has one more, skipped, in the suite of the
    site where it stopped (what did not run was not watched: never a plain pass)."""
    unchecked = []
    if report.stop is not None:
        unchecked.append((file_of(report.stop.site), NOT_RUN, ending(report)))
    return junit.render(as_check(report), title=title(report), unchecked=unchecked)
