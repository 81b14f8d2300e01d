"""Markdown for pull-request comments: the matrix, the cut points and the problems."""

from __future__ import annotations

from gradscope.report import mermaid, style
from gradscope.results import report as m

_ICON = {m.OK: "✅", m.ZERO: "🟡", m.NAN: "🟥"}


def escape(text: str) -> str:
    """Text for a table cell or a list item: one line, no unescaped ``|``."""
    return text.replace("|", "\\|").replace("\n", " ")


_escape = escape


def _cell(pair: m.PairResult) -> str:
    icon = _ICON.get(pair.status, "⛔" if m.is_none(pair.status) else "▫️")
    return f"{icon} {_escape(style.cell(pair))}"


def matrix(report: m.Report) -> list[str]:
    header = ["variable", "shape"] + [f"`{loss.name}`" for loss in report.losses]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for v in report.variables:
        cells = [f"`{_escape(v.name)}`", style.shape(v.shape)]
        cells += [_cell(loss.pair(v.name)) for loss in report.losses]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def sections(report: m.Report, *, problems: bool = True) -> list[str]:
    """The body shared by ``inspect`` and ``check`` markdown (``check`` lists problems once)."""
    lines = matrix(report)
    rows = style.cut_rows(report)
    if rows:
        lines += ["", "**Where the gradient was cut**", ""]
        lines += [
            f"- `{loss}` ← `{var}`: {status}, at {_escape(where)}"
            for loss, var, status, where in rows
        ]
    origins = style.nan_rows(report)
    if origins:
        lines += ["", "**Where NaN/Inf first appeared**", ""]
        lines += [
            f"- `{loss}` ← `{var}`: {_escape(what)}{f', at {_escape(at)}' if at else ''}"
            for loss, var, what, at in origins
        ]
    numeric = style.numeric_rows(report)
    if numeric:
        lines += ["", f"**{style.numeric_heading(report)}**", ""]
        lines += ["| loss | variable | verdict | error / tolerance | coordinates | why |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [
            f"| `{loss}` | `{_escape(var)}` | {verdict} | {error} | {coords} | {_escape(why)} |"
            for loss, var, verdict, error, coords, why in numeric
        ]
    if problems and report.problems:
        lines += ["", "**Problems**", ""]
        for p in report.problems:
            known = " (known)" if p.known else ""
            lines.append(f"- **{p.kind}**{known}: {_escape(p.message)}")
    lines += mermaid.sections(report)  # a picture per loss with a problem, when drawn
    notes = style.note_rows(report)
    if notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {f'`{loss}`: ' if loss else ''}{_escape(note)}" for loss, note in notes]
    return lines


def render(report: m.Report, *, color: bool = False, width: int = 120) -> str:
    title = report.name or report.spec
    head = [
        f"### gradscope: `{_escape(title)}`",
        "",
        f"`{report.spec}` · TensorFlow {report.tensorflow} · {report.device}",
        "",
    ]
    values = ", ".join(f"`{loss.name}` = {style.number(loss.value)}" for loss in report.losses)
    body = sections(report)
    tail = ["", f"Losses: {values}", "", f"**{style.summary(report)}**", ""]
    return "\n".join(head + body + tail)
