"""GitHub Actions workflow commands: each finding of a result (``results/finding.py``) becomes an
annotation on its line.

A new problem is ``::error file=F,line=L,title=T::message``, a problem the baseline holds a
``::notice`` (visible in the pull request, not failing). Values are escaped as the Actions
toolkit does (``%``, CR and LF in messages; also ``:`` and ``,`` in properties). A folded
group lists every spec (for ``gradscope run``, every watched call); the last line is the
verdict, for the log.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from gradscope._src.analysis.baseline import spec_key
from gradscope._src.errors import SpecError, SpecErrors
from gradscope._src.location import Location
from gradscope._src.report import style
from gradscope._src.report.formats import Format, assert_never, unsupported
from gradscope._src.report.table import ending, run_summary
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def escape_data(text: str) -> str:
    """A message, escaped for a workflow command.

    Example:
        >>> escape_data("50% done\\nnext")
        '50%25 done%0Anext'
    """
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file, title), escaped for a workflow command."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding) -> str:
    """``::error file=configs/x.yaml,line=45,title=gradscope unexpected-none::message``."""
    command = "notice" if finding.known else "error"
    title = f"gradscope {'known ' if finding.known else ''}{finding.kind}"
    props = {"file": spec_key(finding.file), "line": str(finding.line), "title": title}
    text = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    message = finding.message if finding.fix is None else (
        f"{finding.message}\nfix: {finding.fix.sentence()}")  # fmt: skip
    return f"::{command} {text}::{escape_data(message)}" + _fix_notice(finding)


def _fix_notice(finding: Finding) -> str:
    """A notice on the line the fix changes, when that is another line than the finding's
    (the ``argmax`` a call site's None comes from): a second line, or nothing."""
    fix = finding.fix
    at = Location.parse(fix.where) if fix is not None else None
    if fix is None or finding.known or at is None:
        return ""
    if (spec_key(at.file), at.line) == (spec_key(finding.file), finding.location.line):
        return ""
    props = {"file": spec_key(at.file), "line": str(at.line), "title": f"gradscope fix: {fix.kind}"}
    text = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    return f"\n::notice {text}::{escape_data(fix.sentence())}"


def spec_errors(errors: SpecErrors | SpecError) -> str:
    """``::error file=F,line=L,col=C,title=gradscope spec error::message`` per error, so a
    check that stops at a bad spec (exit 2) still annotates the lines in the pull request."""
    lines = []
    for e in errors.errors if isinstance(errors, SpecErrors) else (errors,):
        loc = e.location
        props = {"file": spec_key(loc.file), "line": str(max(loc.line, 1)),
                 "col": str(max(loc.column, 1)), "title": "gradscope spec error"}  # fmt: skip
        text = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
        message = f"{e.field}: {e.message}" if e.field else e.message
        lines.append(f"::error {text}::{escape_data(message)}")
    return "\n".join(lines) + "\n"


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """Workflow commands for a GitHub Actions log."""
    match result:
        case CheckResult():
            return _check(result)
        case rr.RunReport():
            return _run(result)
        case m.Report() | DiffReport() | DiffMatrix():
            unsupported(Format.GITHUB, result)
        case _:
            assert_never(result)


def _check(result: CheckResult) -> str:
    lines = [f"::group::gradscope check: {result.checked()}"]
    lines += [f"{r.spec}: {style.summary(r)}" for r in result.reports]
    lines.append("::endgroup::")
    ordered = sorted(result.findings(), key=lambda f: f.known)
    lines += [annotation(f) for f in ordered]
    lines += [
        f"::notice title={escape_property(f'gradscope note: {r.spec}')}::"
        f"{escape_data((f'{loss}: ' if loss else '') + note)}"
        for r in result.reports
        for loss, note in style.note_rows(r)
    ]
    lines += [f"{spec}: fixed since the baseline: {kind} {loss or '-'} × {var or '-'}"
              for spec, loss, var, kind in result.fixed]  # fmt: skip
    lines.append(f"gradscope check {result.verdict()} (exit code {int(result.exit_code)})")
    return "\n".join(lines) + "\n"


def _counts(call: rr.CallResult) -> str:
    """``3 sources: 1 ok, 2 none``."""
    counts = Counter("none" if m.is_none(s.status) else str(s.status) for s in call.sources)
    n = len(call.sources)
    parts = ", ".join(f"{v} {k}" for k, v in counts.items())
    return f"{n} source{'s' if n != 1 else ''}: {parts}"


def _run(report: rr.RunReport) -> str:
    """A run: a folded group lists every watched call; each problem an annotation on its
    call site's line, as for ``check``."""
    sites = len(list(report.sites()))
    calls = len(report.calls)
    lines = [f"::group::{report.title()}: {calls} call{'s' if calls != 1 else ''} at {sites} "
             f"call site{'s' if sites != 1 else ''}"]  # fmt: skip
    lines += [f"{c.where} · {c.api} ({c.mode}) · step {c.step}: {_counts(c)}"
              for c in report.calls]  # fmt: skip
    lines.append("::endgroup::")
    lines += [annotation(f) for f in report.findings()]
    notes = [(c.site, n) for c in report.calls for n in c.notes] + [("", n) for n in report.notes]
    for site, note in notes:
        where = escape_property(f"gradscope note: {site or report.program}")
        lines.append(f"::notice title={where}::{escape_data(note)}")
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        where = escape_property("gradscope run: stopped by --stop")
        lines.append(f"::warning title={where}::{escape_data(ending(report))}")
    lines.append(f"{report.title()}: {run_summary(report)} (exit code {report.exit_code})")
    return "\n".join(lines) + "\n"
