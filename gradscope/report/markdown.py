"""Markdown for pull-request comments: the matrix, the cut points and the problems."""

from __future__ import annotations

from gradscope.report import mermaid, style
from gradscope.report.md import code, prose
from gradscope.results import report as m
from gradscope.results.fix import Fix

_ICON = {m.OK: "✅", m.ZERO: "🟡", m.NAN: "🟥"}


def escape(text: str) -> str:
    """Prose for a table cell: one line, its code spans kept, the rest escaped (``md``)."""
    return prose(text, table=True)


_escape = escape


def _cell(pair: m.PairResult, problem: bool | None = None) -> str:
    """A matrix cell with its icon: ❌ for a problem, a plain ▫️ for a ``None`` that is none
    (``problem`` False: the spec declares it, or nobody minds); ⛔ when it is not known."""
    if problem:
        icon = "❌"
    elif m.is_none(pair.status):
        icon = "▫️" if problem is False else "⛔"
    else:
        icon = _ICON.get(pair.status, "▫️")
    return f"{icon} {_escape(style.cell(pair))}"


def fix_item(fix: Fix | None) -> list[str]:
    """A fix as a nested list item below the cause it fixes (none when there is no fix)."""
    return [f"  - **fix**: {prose(fix.sentence())}"] if fix is not None else []


def _name(name: str, attribute: str) -> str:
    """A variable's name cell, with the attribute the user's code reaches it by."""
    named = code(name, table=True)
    return f"{named} ({code(attribute, table=True)})" if attribute else named


def matrix(report: m.Report) -> list[str]:
    from gradscope.report.rows import problem_pairs

    wrong = problem_pairs(report)
    header = ["variable", "shape"] + [code(loss.name, table=True) for loss in report.losses]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for v in report.variables:
        cells = [_name(v.name, v.attribute), style.shape(v.shape)]
        cells += [_cell(loss.pair(v.name), (loss.name, v.name) in wrong) for loss in report.losses]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def sections(report: m.Report, *, problems: bool = True) -> list[str]:
    """The body shared by ``inspect`` and ``check`` markdown (``check`` lists problems once)."""
    lines = matrix(report)
    rows = style.cut_rows(report)
    if rows:
        lines += ["", "**Where the gradient was cut**", ""]
        for loss, var, status, where in rows:
            lines.append(f"- {code(loss)} ← {code(var)}: {status}, at {prose(where)}")
            lines += fix_item(report.loss(loss).pair(var).fix)
    origins = style.nan_rows(report)
    if origins:
        lines += ["", "**Where NaN/Inf first appeared**", ""]
        lines += [
            f"- {code(loss)} ← {code(var)}: {prose(what)}{f', at {prose(at)}' if at else ''}"
            for loss, var, what, at in origins
        ]
    numeric = style.numeric_rows(report)
    if numeric:
        lines += ["", f"**{style.numeric_heading(report)}**", ""]
        lines += ["| loss | variable | verdict | error / tolerance | coordinates | why |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        lines += [
            f"| {code(loss, table=True)} | {code(var, table=True)} | {verdict} | {error} "
            f"| {coords} | {_escape(why)} |"
            for loss, var, verdict, error, coords, why in numeric
        ]
    if problems and report.problems:
        lines += ["", "**Problems**", ""]
        for p in report.problems:
            known = " (known)" if p.known else ""
            lines.append(f"- **{p.kind}**{known}: {prose(p.message)}")
            lines += fix_item(p.fix)
    lines += mermaid.sections(report)  # a picture per loss with a problem, when drawn
    notes = style.note_rows(report)
    if notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {f'{code(loss)}: ' if loss else ''}{prose(note)}" for loss, note in notes]
    return lines


def render(report: m.Report, *, color: bool = False, width: int = 120) -> str:
    title = report.name or report.spec
    head = [
        f"### gradscope: {code(title)}",
        "",
        f"{code(report.spec)} · TensorFlow {report.tensorflow} · {report.device}",
        "",
    ]
    values = ", ".join(f"{code(loss.name)} = {style.number(loss.value)}" for loss in report.losses)
    body = sections(report)
    tail = ["", f"Losses: {values}", "", f"**{style.summary(report)}**", ""]
    return "\n".join(head + body + tail)
