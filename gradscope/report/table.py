"""The terminal table: a losses x variables matrix, where the gradient was cut, the problems."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from gradscope.report import grid, rows, style
from gradscope.results import report as m
from gradscope.results.fix import Fix


def _title(report: m.Report) -> Text:
    title = Text()
    title.append("gradscope", style="bold")
    title.append(f" · {report.name or report.spec}")
    if report.name:
        title.append(f" ({report.spec})", style="dim")
    where = report.device
    if report.distributed is not None:  # the devices are listed with the replicas
        d = report.distributed.distribution
        where = f"{d.strategy} ×{d.replicas}"
    title.append(f" · TensorFlow {report.tensorflow} · {where}", style="dim")
    return title


class Lines:
    """Lines laid out for the console's width when printed (``grid``: no name is cut)."""

    def __init__(self, make: Callable[[int], list[Text]], title: str = "") -> None:
        self.make, self.title = make, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.title:
            yield Text(self.title, style="bold")
        yield from self.make(options.max_width)


def _matrix(report: m.Report, group: str, problems_only: bool) -> Lines | Text:
    found = rows.matrix_rows(report, group, problems_only)
    if not found:
        return Text("no problems: every pair is as expected" if problems_only else "no variables")
    return Lines(lambda width: grid.lines(report, found, width))


def _cuts(report: m.Report, group: str, problems_only: bool) -> Lines | None:
    found = rows.cut_rows(report, group, problems_only)
    if not found:
        return None
    wrong = rows.problem_pairs(report)
    table = [
        [(r.loss, ""), (r.label, ""), (r.status, _status_style(r, wrong)),
         (style.with_fix(r.where, _fix(report, r)), "")]
        for r in found
    ]  # fmt: skip
    headers = ("loss", "variable", "status", "cut at")
    return Lines(lambda width: grid.columns(headers, table, width), "Where the gradient was cut")


def _fix(report: m.Report, row: rows.CutRow) -> Fix | None:
    """The fix of a cut row's first pair (a group's pairs are cut the same way)."""
    return report.loss(row.loss).pair(row.variables[0]).fix


def _unshown(problem: m.Problem) -> Fix | None:
    """A problem's fix, unless *Where the gradient was cut* shows it under its cut already."""
    return None if problem.cut_points else problem.fix


def _status_style(row: rows.CutRow, wrong: set[tuple[str | None, str | None]]) -> str:
    problem = any((row.loss, v) in wrong for v in row.variables)
    return style.cell_style(row.status.split(",")[0], problem)


def _nan_origins(report: m.Report) -> Lines | None:
    rows = style.nan_rows(report)
    if not rows:
        return None
    table = [
        [(loss, ""), (variable, ""), (what, style.STATUS_STYLE[m.NAN]), (where, "")]
        for loss, variable, what, where in rows
    ]
    headers = ("loss", "variable", "first non-finite value", "at")
    return Lines(lambda width: grid.columns(headers, table, width), "Where NaN/Inf first appeared")


def _numeric(report: m.Report) -> Lines | None:
    rows = style.numeric_rows(report)
    if not rows:
        return None
    table = [
        [(loss, ""), (variable, ""), (verdict, style.VERDICT_STYLE[verdict]), (error, ""),
         (coordinates, ""), (why, "")]
        for loss, variable, verdict, error, coordinates, why in rows
    ]  # fmt: skip
    headers = ("loss", "variable", "verdict", "error / tolerance", "coordinates", "why")
    return Lines(lambda width: grid.columns(headers, table, width), style.numeric_heading(report))


def _replicas(report: m.Report) -> Group | None:
    """Each replica's status and norm (``--strategy``), for the pairs where they can differ."""
    found = style.replica_rows(report)
    if not found:
        return None
    table = Table(box=None, header_style="bold")
    table.add_column("loss", overflow="fold")
    table.add_column("variable", overflow="fold")
    for replica in range(len(found[0][2])):
        table.add_column(f"replica {replica}", no_wrap=True)
    for loss, variable, cells in found:
        marks = [Text(text, style=style.STATUS_STYLE[status]) for text, status in cells]
        table.add_row(loss, variable, *marks)
    return Group(Text(style.replica_heading(report), style="bold"), table)


def _problems(report: m.Report, group: str = "auto") -> Lines | None:
    if not report.problems:
        return None
    table = [
        [(f"{'known ' if r.problem.known else ''}{r.problem.kind}",
          "dim" if r.problem.known else "red"),
         (style.with_fix(r.message, _unshown(r.problem)), "")]
        for r in rows.problem_rows(report.problems, group)
    ]  # fmt: skip
    return Lines(lambda width: grid.columns(None, table, width), "Problems")


def _notes(report: m.Report) -> Lines | None:
    """Each note after its loss; a loss too wide to leave the note room (a site's absolute
    path) puts the note below it, as the problems do."""
    found = style.note_rows(report)
    if not found:
        return None
    table: list[list[grid.Cell]] = [[(loss, "yellow"), (note, "")] for loss, note in found]
    return Lines(lambda width: grid.columns(None, table, width), "Notes")


def report_renderable(
    report: m.Report, *, problems: bool = True, group: str = "auto", problems_only: bool = False
) -> Group:
    """The report as rich renderables (also what ``Report.__rich__`` returns).

    ``problems=False`` leaves out the problems table (``check`` lists them once for all specs);
    ``group`` gathers variables into rows (``rows.Group``); ``problems_only`` keeps only the
    variables and cut points a problem names.
    """
    parts: list[Any] = [_title(report), Text(), _matrix(report, group, problems_only)]
    extras = (_cuts(report, group, problems_only), _nan_origins(report), _numeric(report),
              _replicas(report), _problems(report, group) if problems else None,
              _notes(report))  # fmt: skip
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
        force_jupyter=False,  # a string, also in a notebook (rich would display it there)
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
    )
    console.print(renderable, crop=False)  # a name longer than the width is not cut
    # rich pads every cell to its column's width: a CI log or a diff gets no trailing blanks
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def render(
    report: m.Report,
    *,
    color: bool = False,
    width: int = 120,
    group: str = "auto",
    problems_only: bool = False,
) -> str:
    """The whole inspect report as a terminal table (``group``, ``problems_only``: as
    ``report_renderable``)."""
    renderable = report_renderable(report, group=group, problems_only=problems_only)
    return to_text(renderable, color=color, width=width)
