"""Every result as a notebook shows it: an HTML table (``_repr_html_``), and the terminal
table where IPython prints text (``_repr_pretty_``).

The HTML is a fragment (Jupyter, Colab and VS Code put it in the page; styles are inline, as
notebook sanitizers drop ``<style>``): per row the status, norm, where the gradient was cut
and why, and per problem its message and, when the finding has one, its fix.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from gradscope._src.report import palette, style
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results import words
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result

_TABLE = "border-collapse:collapse;margin:.3em 0 .8em 0;font-size:13px"
_CELL = "padding:.2em .6em;border-bottom:1px solid #eceff1;text-align:left;vertical-align:top"
_HEAD = _CELL + ";font-weight:600;border-bottom:1px solid #b0bec5"
_TITLE = "font-weight:600;margin:.6em 0 .2em 0"
_DIM = "color:#607d8b"


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """The HTML fragment of any result (inspect, diff, check, run/watch)."""
    match result:
        case rr.RunReport():
            return _run(result)
        case m.Report():
            return _inspect(result)
        case CheckResult():
            return _check(result)
        case DiffReport():
            return _diff(result)
        case DiffMatrix():
            return _matrix(result)
        case _:  # not a result (a timeline's picture draws itself: ``timeline_html``)
            raise ValueError(f"no notebook rendering for {type(result).__name__}")


def text(result: Result, width: int = 100) -> str:
    """The terminal table of a result (what IPython prints for it)."""
    from gradscope._src.report import table

    return table.render(result, width=width)


def timeline_html(timeline: Mapping[str, Any], svg: str) -> str:
    """A timeline's picture and findings, as ``gradscope.plot`` shows them in a notebook."""
    return _timeline(timeline, svg)


def timeline_text(timeline: Mapping[str, Any]) -> str:
    """A timeline's findings, where IPython prints text."""
    return _timeline_text(timeline)


# -- pieces ----------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _code(value: object) -> str:
    return f"<code>{_e(value)}</code>"


def _table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A table; ``rows`` hold HTML already escaped."""
    top = "".join(f'<th style="{_HEAD}">{_e(h)}</th>' for h in head)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in row) + "</tr>" for row in rows
    )
    return f'<table style="{_TABLE}"><tr>{top}</tr>{body}</table>'


def _status(status: str) -> str:
    fill, _border, ink = palette.CLASS_COLORS[palette.status_class(status)]
    return (f'<span style="background:{fill};color:{ink};padding:0 .4em;border-radius:3px;'
            f'white-space:nowrap">{_e(status)}</span>')  # fmt: skip


def _norm(status: str, norm: float | None, sparse: bool = False) -> str:
    if not m.has_gradient(status):
        return "-"
    return _e(style.number(norm) + (" (sparse)" if sparse else ""))


def _why(cut_points: Sequence[Any], note: str = "") -> str:
    if cut_points:
        return "<br>".join(_e(words.cut_text(c)) for c in cut_points)
    return _e(note)


def _explained(head: Sequence[str], rows: list[list[str]], whys: Sequence[str]) -> str:
    """A table whose last column is each row's explanation (HTML): one that several rows share
    is written once below the table as ``[n]`` (a model's 100 unread variables say their
    cause once, as the terminal table does)."""
    shared = [w for w in dict.fromkeys(whys) if w and whys.count(w) > 1]
    cells = [[*row, f"[{shared.index(w) + 1}]" if w in shared else w]
             for row, w in zip(rows, whys, strict=True)]  # fmt: skip
    notes = "".join(f'<div style="{_DIM}">[{n}] {w}</div>' for n, w in enumerate(shared, 1))
    return _table(head, cells) + notes


def _fixes(items: Iterable[tuple[str, Fix | None]]) -> str:
    """Each fix once, naming what it covers (``rows.fix_groups``)."""
    from gradscope._src.report.rows import fix_groups, fix_line

    return "".join(f'<div style="color:#2e7d32;margin:.2em 0">{_e(fix_line(names, fix))}</div>'
                   for names, fix in fix_groups(items))  # fmt: skip


def _title(words: str, dim: str = "") -> str:
    extra = f' <span style="{_DIM};font-weight:400">{_e(dim)}</span>' if dim else ""
    return f'<div style="{_TITLE}">{_e(words)}{extra}</div>'


def _line(words: str, bad: bool) -> str:
    tone = "#c62828" if bad else "#2e7d32"
    return f'<div style="font-weight:600;color:{tone};margin:.4em 0">{_e(words)}</div>'


def _notes(notes: Iterable[str]) -> str:
    return "".join(f'<div style="{_DIM}">note: {_e(n)}</div>' for n in notes)


def _wrap(parts: Iterable[str]) -> str:
    return '<div class="gradscope">' + "".join(parts) + "</div>"


def _problems(head: Sequence[str], rows: list[list[str]], fixes: str = "") -> str:
    return _title("Problems") + _table(head, rows) + fixes


# -- results ---------------------------------------------------------------------------------


def _run(report: rr.RunReport) -> str:
    from gradscope._src.report.table import (
        heading,
        run_summary,
        source_rows,
        unshown_run_fixes,
        why,
    )

    what = " ".join(report.argv) if report.argv else report.program
    parts = [_title(f"gradscope {report.entry} · {what}",
                    f"{report.framework} · {report.device}")]  # fmt: skip
    if not report.calls:
        parts.append("<div>No gradient call was made.</div>")
    found = report.findings()
    for call in report.calls:
        named = {str(f.variable) for f in found if (f.where, f.loss) == (call.where, call.label)}
        grouped = source_rows(call, named)  # a big model's healthy runs gathered, as the table
        rows = [[_code(r.label()), _e(r.shape()), _status(r.first.status),
                 _e(r.norm())] for r in grouped]  # fmt: skip
        whys = [_e(why(r.first)) for r in grouped]
        parts += [_title(heading(call)),
                  _explained(["source", "shape", "status", "norm", "cut at / why"], rows, whys),
                  _fixes((s.name, s.fix) for s in call.sources),
                  _notes(call.notes)]  # fmt: skip
    if found:
        sites: dict[tuple[str, str], list[str]] = {}
        for f in found:
            sites.setdefault((f.kind, f.where), []).append(str(f.variable))
        # a row's count beside its kind: the rows add up to the summary's (as the table's)
        rows = [[_e(f"{kind} ×{len(names)}" if len(names) > 1 else kind), _e(site),
                 ", ".join(_code(n) for n in names)]
                for (kind, site), names in sites.items()]  # fmt: skip
        unshown = "".join(
            f'<div style="color:#2e7d32;margin:.2em 0">{_e(_fix_line(names, fix))}</div>'
            for names, fix in unshown_run_fixes(report, found)
        )
        parts.append(_problems(["kind", "site", "sources"], rows, unshown))
    parts += [_notes(report.notes), _line(run_summary(report), bool(report.exit_code))]
    return _wrap(parts)


def _fix_line(names: Sequence[str], fix: Fix) -> str:
    from gradscope._src.report.rows import fix_line

    return fix_line(names, fix)


def _inspect(report: m.Report) -> str:
    from gradscope._src.report.rows import group_label

    parts = [_title(f"gradscope inspect · {report.name or report.spec}",
                    f"{report.framework} · {report.device}")]  # fmt: skip
    wrong = {(p.loss, p.variable) for p in report.problems}
    for loss in report.losses:
        runs: list[list[m.PairResult]] = []  # consecutive alike pairs, as the table gathers
        for p in loss.pairs:
            last = runs[-1][0] if runs else None
            if (last is not None and len(loss.pairs) >= _GATHER_FROM and _alike(last, p)
                    and (loss.name, p.variable) not in wrong
                    and (loss.name, last.variable) not in wrong):  # fmt: skip
                runs[-1].append(p)
            else:
                runs.append([p])
        rows, whys = [], []
        for run in runs:
            first = run[0]
            label, detail = ((first.variable, style.shape(first.shape)) if len(run) == 1
                             else group_label([p.variable for p in run]))  # fmt: skip
            rows.append([_code(label), _e(detail), _status(first.status),
                         _norm(first.status, first.norm, first.sparse)])  # fmt: skip
            whys.append(_why(first.cut_points, first.note))
        parts += [_title(f"loss {loss.name}", f"value {style.number(loss.value)}"),
                  _explained(["variable", "shape", "status", "norm", "cut at / why"], rows,
                             whys),
                  _fixes((p.variable, p.fix) for p in loss.pairs if p.cut_points),
                  _notes(loss.notes)]  # fmt: skip
    parts.append(_findings(report.findings(), shown=True))
    parts.append(_notes(report.notes))
    count = len(report.failures)
    parts.append(_line(f"{count} problem{'s' if count != 1 else ''}", bool(count)))
    return _wrap(parts)


#: A loss's pairs are gathered into runs from this many on (``rows.AUTO_GROUP_FROM``).
_GATHER_FROM = 40


def _alike(a: m.PairResult, b: m.PairResult) -> bool:
    """Pairs a run gathers: the same status and the same explanation, never a nan or an
    unexplained None (each its own row, as in the table)."""
    return (a.status == b.status and a.status not in (m.NAN, m.UNEXPLAINED)
            and a.cut_points == b.cut_points and a.cause == b.cause)  # fmt: skip


def _findings(found: Sequence[Finding], shown: bool = False) -> str:
    """Problems, alike ones gathered (``rows.problem_rows``), then each fix once; ``shown``:
    a problem with cut points has its fix under its loss already (as the table shows it under
    *Where the gradient was cut*)."""
    if not found:
        return ""
    from gradscope._src.report.rows import problem_rows

    rows = [[_e(r.finding.kind) + (" (known)" if r.finding.known else ""),
             _e(r.finding.loss or ""), _code(", ".join(r.variables)), _e(r.message),
             _why(r.finding.cut_points)] for r in problem_rows(found)]  # fmt: skip
    fixes = _fixes((str(f.variable or ""), None if shown and f.cut_points else f.fix)
                   for f in found)  # fmt: skip
    return _problems(["kind", "loss", "variable", "message", "cut at"], rows, fixes)


def _check(result: Any) -> str:
    rows = [[_e(r.name or r.spec), _e(r.spec), _e(len(r.losses)),
             _e(sum(len(loss.pairs) for loss in r.losses)), _e(len(r.failures)),
             _e(len(r.known))] for r in result.reports]  # fmt: skip
    parts = [_title("gradscope check", result.checked()),
             _table(["model", "file", "losses", "pairs", "problems", "known"], rows)]  # fmt: skip
    for report in result.reports:
        if report.problems:
            parts += [_title(report.spec), _findings(report.findings())]
    parts.append(_line(result.verdict(), not result.passed))
    return _wrap(parts)


def _diff(result: Any) -> str:
    diff = result.diff
    rows = []
    for v in diff.variables:
        why = _e(v.explanation or "") + ("<br>" if v.explanation and v.cut_points else "")
        rows.append([_code(v.variable), _status(v.a.status), _norm(v.a.status, v.a.norm),
                     _status(v.b.status), _norm(v.b.status, v.b.norm),
                     _e(style.number(v.cosine)) if v.cosine is not None else "-",
                     why + _why(v.cut_points)])  # fmt: skip
    head = ["variable", diff.loss_a, "norm", diff.loss_b, "norm", "cosine", "why / cut at"]
    parts = [_title(f"gradscope diff · {diff.loss_a} vs {diff.loss_b}",
                    result.report.name or result.report.spec),
             _table(head, rows), _line(diff.summary(), bool(diff.conflicts))]  # fmt: skip
    return _wrap(parts)


def _matrix(result: Any) -> str:
    losses = result.losses
    rows = []
    for a in losses:
        cells = [_code(a)]
        for b in losses:
            cosine = result.cosine(a, b) if a != b else None
            cells.append("" if a == b else (_e(style.number(cosine)) if cosine is not None
                                              else "-"))  # fmt: skip
        rows.append(cells)
    parts = [_title("gradscope diff · cosine of every two losses' gradients",
                    result.report.name or result.report.spec),
             _table(["", *losses], rows),
             _line(result.summary(), bool(result.conflicts))]  # fmt: skip
    return _wrap(parts)


def _timeline_findings(timeline: Mapping[str, Any]) -> list[Finding]:
    """A timeline's findings (its JSON rows, checked by ``timeline/reader.py``) as every
    result gives them; each is about its site (``Finding.loss``) from its step."""
    where = str(timeline.get("program") or "")
    return [Finding.from_dict(f, where) for f in timeline.get("findings") or []]


def _timeline(timeline: Mapping[str, Any], svg: str) -> str:
    findings = _timeline_findings(timeline)
    steps = timeline.get("steps") or []
    parts = [_title(f"gradscope timeline · {timeline.get('program') or ''}",
                    f"{len(steps)} record(s)"), f"<div>{svg}</div>"]  # fmt: skip
    if findings:
        rows = [[_e(f.kind), _e(f.loss), _code(f.variable), _e("" if f.step is None else f.step),
                 _e(f.message), "<br>".join(_e(words.cut_text(c)) for c in f.cut_points)]
                for f in findings]  # fmt: skip
        fixes = _fixes((str(f.variable or ""), f.fix) for f in findings)
        head = ["kind", "site", "variable", "from step", "message", "cut at"]
        parts.append(_problems(head, rows, fixes))
    count = len(findings)
    parts.append(_line(f"{count} finding{'s' if count != 1 else ''}", bool(count)))
    return _wrap(parts)


def _timeline_text(timeline: Mapping[str, Any]) -> str:
    findings = _timeline_findings(timeline)
    lines = [f"gradscope timeline · {timeline.get('program') or ''} · "
             f"{len(timeline.get('steps') or [])} record(s)"]  # fmt: skip
    lines += [f"{f.kind}: {f.message}" for f in findings]
    lines.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    return "\n".join(lines)
