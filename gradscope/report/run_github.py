"""``gradscope run --format github``: workflow commands for a GitHub Actions log.

Each problem is an annotation on its call site's line (``github.annotation``, as for
``check``); a folded group lists every watched call; the last line is the verdict.
"""

from __future__ import annotations

from collections import Counter

from gradscope.report import github
from gradscope.report.run_check import as_check, title
from gradscope.report.run_table import ending, summary
from gradscope.results import report as m
from gradscope.results.run import CallResult, RunReport


def _counts(call: CallResult) -> str:
    """``3 sources: 1 ok, 2 none``."""
    counts = Counter("none" if m.is_none(s.status) else str(s.status) for s in call.sources)
    n = len(call.sources)
    parts = ", ".join(f"{v} {k}" for k, v in counts.items())
    return f"{n} source{'s' if n != 1 else ''}: {parts}"


def render(report: RunReport, *, color: bool = False, width: int = 120) -> str:
    """Workflow commands for a GitHub Actions log."""
    sites = len(list(report.sites()))
    calls = len(report.calls)
    lines = [f"::group::{title(report)}: {calls} call{'s' if calls != 1 else ''} at {sites} "
             f"call site{'s' if sites != 1 else ''}"]  # fmt: skip
    lines += [f"{c.where} · {c.api} ({c.mode}) · step {c.step}: {_counts(c)}"
              for c in report.calls]  # fmt: skip
    lines.append("::endgroup::")
    lines += [github.annotation(p) for p in as_check(report).problems]
    notes = [(c.site, n) for c in report.calls for n in c.notes] + [("", n) for n in report.notes]
    for site, note in notes:
        where = github.escape_property(f"gradscope note: {site or report.program}")
        lines.append(f"::notice title={where}::{github.escape_data(note)}")
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        where = github.escape_property("gradscope run: stopped by --stop")
        lines.append(f"::warning title={where}::{github.escape_data(ending(report))}")
    lines.append(f"{title(report)}: {summary(report)} (exit code {report.exit_code})")
    return "\n".join(lines) + "\n"
