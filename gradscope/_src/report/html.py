"""A self-contained HTML page: the inspect table and each loss's gradient-flow picture.

Everything is inline (CSS, SVG); the page loads nothing, so it opens offline and can be
attached to a CI run. ``page`` is pure; ``render`` (the ``inspect --format html`` renderer)
lays the pictures out with Graphviz's ``dot`` when it is installed and otherwise shows, per
picture, how to install it and the DOT source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING

from gradscope._src.report import dot, palette, style
from gradscope._src.report.formats import Format, assert_never, unsupported
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results import words
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.version import __version__

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result
    from gradscope._src.results.fix import Fix

_CODE = re.compile(r"`([^`]+)`")  # the problems' markdown code spans

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;
 color:#263238;margin:2em auto;max-width:1500px;padding:0 1em}
h1{font-size:1.4em;margin:0}h2{font-size:1.15em;margin:1.6em 0 .5em}
.meta,.legend,footer{color:#607d8b;font-size:.9em}
table{border-collapse:collapse;margin:.5em 0}
th,td{padding:.25em .7em;border-bottom:1px solid #eceff1;text-align:left;vertical-align:top}
th{font-weight:600}td.num,th.num{text-align:right}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.95em}
.cell{border-radius:3px;white-space:nowrap}
.summary{font-weight:600}.summary.fail{color:#c62828}.summary.pass{color:#2e7d32}
.problems li{margin:.2em 0}.kind{font-weight:600;color:#c62828}.known{color:#90a4ae}
.picture{overflow:auto;border:1px solid #eceff1;border-radius:6px;padding:.5em;
 background:#fff;text-align:center}
.picture svg{max-width:100%;max-height:85vh;height:auto;width:auto}
.missing{color:#c62828}pre{background:#f5f7f8;padding:.7em;overflow-x:auto}
nav a{margin-right:1em}
"""


def _status_css() -> str:
    rules = [
        f".{name}{{background:{fill};color:{ink}}}"
        for name, (fill, _border, ink) in palette.CLASS_COLORS.items()
    ]
    return "\n".join(rules)


def _matrix(report: m.Report) -> list[str]:
    """The matrix; a big model's healthy runs gathered as in the table (``rows``), each
    gathered row listing its variables in a tooltip."""
    from gradscope._src.report.rows import matrix_rows

    head = "".join(
        f'<th>{_code(loss.name)}<br><span class="meta">{style.number(loss.value)}</span></th>'
        for loss in report.losses
    )
    out = [f"<table><tr><th>variable</th><th>shape</th>{head}</tr>"]
    for row in matrix_rows(report):
        cells = []
        for i, loss in enumerate(report.losses):
            pair = loss.pair(row.variables[0])
            tip = "; ".join([pair.status] + [words.cut_text(c) for c in pair.cut_points])
            css = palette.status_class(pair.status)
            if css == "none" and not row.problems[i]:
                css = "idle"  # a None nobody minds (or the spec declares) is not red
            text = escape(row.cells[i])
            cells.append(f'<td class="cell {css}" title="{escape(tip)}">{text}</td>')
        names = ", ".join(row.variables) if len(row.variables) > 1 else row.label
        out.append(
            f'<tr><td title="{escape(names)}">{_code(row.label)}</td>'
            f"<td>{escape(row.detail)}</td>{''.join(cells)}</tr>"
        )
    out.append("</table>")
    return out


def _code(text: str) -> str:
    return f"<code>{escape(text)}</code>"


def _cuts(report: m.Report) -> list[str]:
    from gradscope._src.report.rows import cut_fixes, cut_rows

    rows = cut_rows(report)  # identical cut points of a big model gathered, as in the table
    if not rows:
        return []
    out = ["<h2>Where the gradient was cut</h2>", "<table>"]
    out.append("<tr><th>loss</th><th>variable</th><th>status</th><th>cut at</th></tr>")
    for r in rows:
        out.append(
            f"<tr><td>{_code(r.loss)}</td><td>{_code(r.label)}</td><td>{escape(r.status)}</td>"
            f"<td>{escape(r.where)}</td></tr>"
        )
    return [*out, "</table>", *_fixes(cut_fixes(report))]


def _fixes(found: Sequence[tuple[tuple[str, ...], Fix]]) -> list[str]:
    """Each fix once, naming the variables it covers (``rows.fix_groups``)."""
    from gradscope._src.report.rows import fix_line

    if not found:
        return []
    said = [_CODE.sub(r"<code>\1</code>", escape(fix_line(names, fix))) for names, fix in found]
    return ['<ul class="fixes">', *(f'<li class="fix">{s}</li>' for s in said), "</ul>"]


def _rows(title: str, header: list[str], rows: Sequence[tuple[str, ...]], code: int) -> list[str]:
    """A section: a heading and a table; the first ``code`` columns are names (``<code>``)."""
    if not rows:
        return []
    out = [f"<h2>{escape(title)}</h2>", "<table>"]
    out.append("<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>")
    for row in rows:
        cells = [_code(c) if i < code else escape(c) for i, c in enumerate(row)]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return [*out, "</table>"]


def _nan_origins(report: m.Report) -> list[str]:
    header = ["loss", "variable", "first non-finite value", "at"]
    return _rows("Where NaN/Inf first appeared", header, style.nan_rows(report), 2)


def _numeric(report: m.Report) -> list[str]:
    rows = style.numeric_rows(report)
    header = ["loss", "variable", "verdict", "error / tolerance", "coordinates", "why"]
    return _rows(style.numeric_heading(report), header, rows, 2) if rows else []


def _problems(report: m.Report) -> list[str]:
    if not report.problems:
        return []
    from gradscope._src.report.rows import fix_groups, problem_rows

    out = ["<h2>Problems</h2>", '<ul class="problems">']
    for row in problem_rows(report.findings()):  # alike ones gathered, as in the table
        p = row.finding
        kind = f'<span class="{"known" if p.known else "kind"}">{escape(p.kind)}</span>'
        message = _CODE.sub(r"<code>\1</code>", escape(row.message))
        out.append(f"<li>{kind}{' (known)' if p.known else ''}: {message}</li>")
    # the fixes of problems without a cut (those with one are under the cuts already)
    unshown = fix_groups((str(f.variable or ""), None if f.cut_points else f.fix)
                         for f in report.findings())  # fmt: skip
    return [*out, "</ul>", *_fixes(unshown)]


def _pictures(report: m.Report, svgs: Mapping[str, str | None]) -> list[str]:
    out: list[str] = []
    for pic in report.pictures:
        if pic.loss not in svgs:
            continue
        svg = svgs[pic.loss]
        out.append(f'<section id="loss-{escape(pic.loss)}">')
        out.append(f"<h2>Gradient flow of {_code(pic.loss)}</h2>")
        if svg is not None:
            out.append(f'<div class="picture">{svg}</div>')
        else:
            out.append(f'<p class="missing">{escape(_missing())}</p>')
            source = escape(dot.picture(report, pic.loss, caption=False))
            out.append(f"<details><summary>DOT source</summary><pre>{source}</pre></details>")
        off = palette.off_path_text(pic)
        legend = palette.LEGEND + (f" · {off}" if off else "")
        out += [f'<p class="legend">{escape(legend)}</p>', "</section>"]
    return out


def _missing() -> str:
    from gradscope._src.report.graphviz import INSTALL_HINT

    return f"No picture: {INSTALL_HINT}."


def page(report: m.Report, svgs: Mapping[str, str | None], *, focus: str | None = None) -> str:
    """The whole page: the table, the cut points, the problems and one picture per loss.

    Args:
        report: a report from a run with ``pictures=True`` (without, the page has no pictures).
        svgs: loss name -> its picture as an inline ``<svg>`` element, or None when it could
            not be laid out (the page then says how to install Graphviz). Losses missing
            from the mapping get no picture section.
        focus: a loss whose picture the page opens on (first, before the tables), as
            ``gradscope graph -o page.html`` does.
    """
    title = f"gradscope · {report.name or report.spec}"
    tone = "fail" if report.failures else "pass"
    drawn = [p.loss for p in report.pictures if p.loss in svgs]
    nav = " ".join(f'<a href="#loss-{escape(n)}">{escape(n)}</a>' for n in drawn)
    body = [
        f"<header><h1>{escape(title)}</h1>",
        f'<p class="meta">{_code(report.spec)} · {escape(report.framework)} · '
        f"{escape(report.device)}</p></header>",
        f'<p class="summary {tone}">{escape(style.summary(report))}</p>',
        *[
            f'<p class="meta">note{f" ({escape(loss)})" if loss else ""}: {escape(n)}</p>'
            for loss, n in style.note_rows(report)
        ],
        *([f"<nav>Pictures: {nav}</nav>"] if nav and focus is None else []),
        *(_pictures(report, {focus: svgs[focus]}) if focus in drawn else []),
        "<h2>Every loss × every variable</h2>",
        *_matrix(report),
        *_cuts(report),
        *_nan_origins(report),
        *_numeric(report),
        *_problems(report),
        *_pictures(report, {k: v for k, v in svgs.items() if k != focus}),
        f"<footer><p>Made by gradscope {escape(__version__)}.</p></footer>",
    ]
    head = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{_CSS}{_status_css()}\n</style>\n</head>\n"
    )
    return head + "<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """The page of an inspect report (``inspect --format html``)."""
    match result:
        case m.Report():
            return _page(result)
        case CheckResult() | DiffReport() | DiffMatrix() | rr.RunReport():
            unsupported(Format.HTML, result)
        case _:
            assert_never(result)


def _page(report: m.Report) -> str:
    """The page for every loss the report has a picture of."""
    from gradscope._src.report import graphviz

    svgs = {
        p.loss: graphviz.inline_svg(dot.picture(report, p.loss, caption=False))
        for p in report.pictures
    }
    return page(report, svgs)
