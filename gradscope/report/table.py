"""The terminal table: a losses x variables matrix, where the gradient was cut, the problems."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from gradscope.analysis import model as m
from gradscope.report import style


def _title(report: m.Report) -> Text:
    title = Text()
    title.append("gradscope", style="bold")
    title.append(f" · {report.name or report.spec}")
    if report.name:
        title.append(f" ({report.spec})", style="dim")
    title.append(f" · TensorFlow {report.tensorflow} · {report.device}", style="dim")
    return title


def _matrix(report: m.Report) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("variable", no_wrap=True)
    table.add_column("shape", style="dim", no_wrap=True)
    for loss in report.losses:
        table.add_column(f"{loss.name}\n{style.number(loss.value)}", no_wrap=True)
    for variable in report.variables:
        row: list[Any] = [variable.name, style.shape(variable.shape)]
        for loss in report.losses:
            pair = loss.pair(variable.name)
            row.append(Text(style.cell(pair), style=style.STATUS_STYLE[pair.status]))
        table.add_row(*row)
    return table


def _cuts(report: m.Report) -> Table | None:
    rows = style.cut_rows(report)
    if not rows:
        return None
    table = Table(title="Where the gradient was cut", title_justify="left", box=None,
                  header_style="bold", title_style="bold")  # fmt: skip
    for name in ("loss", "variable", "status", "cut at"):
        table.add_column(name, overflow="fold")
    for loss, variable, status, where in rows:
        table.add_row(loss, variable, Text(status, style=style.STATUS_STYLE.get(status, "")), where)
    return table


def _nan_origins(report: m.Report) -> Table | None:
    rows = style.nan_rows(report)
    if not rows:
        return None
    table = Table(title="Where NaN/Inf first appeared", title_justify="left", box=None,
                  header_style="bold", title_style="bold")  # fmt: skip
    for name in ("loss", "variable", "first non-finite value", "at"):
        table.add_column(name, overflow="fold")
    for loss, variable, what, where in rows:
        table.add_row(loss, variable, Text(what, style=style.STATUS_STYLE[m.NAN]), where)
    return table


def _numeric(report: m.Report) -> Group | None:
    rows = style.numeric_rows(report)
    if not rows:
        return None
    # the heading is longer than a narrow table: a line of its own, not the table's title
    table = Table(box=None, header_style="bold")
    for name in ("loss", "variable", "verdict", "error / tolerance", "coordinates", "why"):
        table.add_column(name, overflow="fold", no_wrap=name != "why")
    for loss, variable, verdict, error, coordinates, why in rows:
        mark = Text(verdict, style=style.VERDICT_STYLE[verdict])
        table.add_row(loss, variable, mark, error, coordinates, why)
    return Group(Text(style.numeric_heading(report), style="bold"), table)


def _problems(report: m.Report) -> Table | None:
    if not report.problems:
        return None
    table = Table(title="Problems", title_justify="left", box=None, show_header=False,
                  title_style="bold")  # fmt: skip
    table.add_column("kind", no_wrap=True)
    table.add_column("message", overflow="fold")
    for p in report.problems:
        kind = Text(f"{'known ' if p.known else ''}{p.kind}", style="dim" if p.known else "red")
        table.add_row(kind, p.message)
    return table


def _notes(report: m.Report) -> Table | None:
    rows = style.note_rows(report)
    if not rows:
        return None
    table = Table(title="Notes", title_justify="left", box=None, show_header=False,
                  title_style="bold")  # fmt: skip
    table.add_column("loss", no_wrap=True, style="yellow")
    table.add_column("note", overflow="fold")
    for loss, note in rows:
        table.add_row(loss, note)
    return table


def report_renderable(report: m.Report, *, problems: bool = True) -> Group:
    """The report as rich renderables (also what ``Report.__rich__`` returns).

    ``problems=False`` leaves out the problems table (``check`` lists them once for all specs).
    """
    parts: list[Any] = [_title(report), Text(), _matrix(report)]
    extras = (_cuts(report), _nan_origins(report), _numeric(report),
              _problems(report) if problems else None, _notes(report))  # fmt: skip
    for extra in extras:
        if extra is not None:
            parts += [Text(), extra]
    tone = "red" if report.failures else "green"
    parts += [Text(), Text(style.summary(report), style=f"bold {tone}")]
    return Group(*parts)


def to_text(renderable: Any, *, color: bool = False, width: int = 120) -> str:
    """Render any rich renderable to a string; ANSI colours only when ``color``."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
    )
    console.print(renderable)
    # rich pads every cell to its column's width: a CI log or a diff gets no trailing blanks
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def render(report: m.Report, *, color: bool = False, width: int = 120) -> str:
    """The whole inspect report as a terminal table."""
    return to_text(report_renderable(report), color=color, width=width)
