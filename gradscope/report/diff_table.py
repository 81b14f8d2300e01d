"""The terminal tables of ``gradscope diff``: two losses side by side, or the cosine matrix."""

from __future__ import annotations

from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from gradscope.analysis.diff import BOTH, REACHES, Diff, DiffReport
from gradscope.analysis.diff_matrix import DiffMatrix
from gradscope.report import diff_style as ds
from gradscope.report import style
from gradscope.report.grid import Whole
from gradscope.report.table import to_text
from gradscope.results import report as m


def _title(report: m.Report, what: str) -> Text:
    title = Text()
    title.append("gradscope diff", style="bold")
    title.append(f" · {what} · {report.name or report.spec}")
    if report.name:
        title.append(f" ({report.spec})", style="dim")
    title.append(f" · TensorFlow {report.tensorflow} · {report.device}", style="dim")
    return title


_CONFLICTS = "Pulling against each other (negative cosine, most negative first)"


def _section(title: str, table: Table | Whole) -> Group:
    """A bold title on its own line (a table's title would wrap at the table's width)."""
    return Group(Text(title, style="bold"), table)


def _table() -> Table:
    return Table(box=None, header_style="bold")


def _side(pair: m.PairResult) -> Text:
    return Text(style.cell(pair), style=style.STATUS_STYLE[pair.status])


def _variables(result: DiffReport) -> Table:
    diff, a, b = result.diff, result.loss_a, result.loss_b
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("variable", no_wrap=True)
    table.add_column("shape", style="dim", no_wrap=True)
    table.add_column(f"A: {a.name}\n{style.number(a.value)}", no_wrap=True)
    table.add_column(f"B: {b.name}\n{style.number(b.value)}", no_wrap=True)
    table.add_column("cosine", justify="right", no_wrap=True)
    table.add_column("signs\nagree", justify="right", no_wrap=True)
    table.add_column("norm\nA/B", justify="right", no_wrap=True)
    for v in diff.variables:
        numbers: list[Any] = [Text("")] * 3
        if v.reach == BOTH:
            numbers = [
                Text(ds.cosine(v.cosine), style=ds.cosine_style(v.cosine)),
                ds.percent(v.sign_agreement),
                ds.ratio(v.norm_ratio),
            ]
        table.add_row(v.variable, style.shape(v.shape), _side(v.a), _side(v.b), *numbers)
    return table


class _Fitted:
    """The side-by-side table when it fits the width; else each variable's name on a line of
    its own (never shortened) with its cells below it, labelled."""

    def __init__(self, result: DiffReport) -> None:
        self.result = result

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = _variables(self.result)
        natural = Measurement.get(console, options.update_width(10_000), table).maximum
        if natural <= options.max_width:
            yield table
            return
        diff, a, b = self.result.diff, self.result.loss_a, self.result.loss_b
        yield Text(f"A: {a.name} = {style.number(a.value)} · B: {b.name} = "
                   f"{style.number(b.value)}", style="bold")  # fmt: skip
        for v in diff.variables:
            name = Text(f"{v.variable}  {style.shape(v.shape)}")
            name.no_wrap, name.overflow = True, "ignore"
            yield name
            line = Text("  A: ").append_text(_side(v.a)).append("  B: ").append_text(_side(v.b))
            if v.reach == BOTH:
                line.append(f"  cosine {ds.cosine(v.cosine)}", style=ds.cosine_style(v.cosine))
                line.append(f"  signs agree {ds.percent(v.sign_agreement)}")
                line.append(f"  norm A/B {ds.ratio(v.norm_ratio)}")
            yield line


def _reach(diff: Diff) -> Group | None:
    rows = [(r, v) for r in REACHES[1:] for v in diff.variables if v.reach == r]
    if not rows:
        return None
    located = any(v.cut_points for _, v in rows)
    table = _table()
    for name in ("reach", "variable", "why", "cut at")[: 4 if located else 3]:
        table.add_column(name, overflow="fold", no_wrap=name in ("reach", "variable"))
    for reach, v in rows:
        cells: list[Any] = [ds.reach_label(diff, reach), v.variable, v.explanation or ""]
        if located:
            cells.append(Text(ds.sources(diff, v.variable), style="dim"))
        table.add_row(*cells)
    return _section("Who reaches what", table)


def _conflicts(diff: Diff) -> Group | None:
    if not diff.conflicts:
        return None
    table = _table()
    for name in ("variable", "cosine", "signs agree", "norm A/B"):
        table.add_column(name, justify="left" if name == "variable" else "right", no_wrap=True)
    for v in diff.conflicts:
        cosine = Text(ds.cosine(v.cosine), style=ds.cosine_style(v.cosine))
        table.add_row(v.variable, cosine, ds.percent(v.sign_agreement), ds.ratio(v.norm_ratio))
    return _section(_CONFLICTS, Whole(table))


def diff_renderable(result: DiffReport) -> Group:
    """Two losses side by side as rich renderables (also ``DiffReport.__rich__``)."""
    diff = result.diff
    parts: list[Any] = [_title(result.report, f"{diff.loss_a} vs {diff.loss_b}"), Text()]
    parts.append(_Fitted(result))
    for extra in (_reach(diff), _conflicts(diff)):
        if extra is not None:
            parts += [Text(), extra]
    parts += [Text(), Text(diff.whole_model(), style=f"bold {ds.cosine_style(diff.cosine)}")]
    parts += _notes(result.report)  # before the summary, which stays the last line
    parts.append(Text(diff.summary(), style="bold"))
    return Group(*parts)


def _matrix(result: DiffMatrix) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("loss", no_wrap=True)
    for name in result.losses:
        table.add_column(name, justify="right", overflow="fold")
    for a in result.losses:
        cells = []
        for b in result.losses:
            value = result.cosine(a, b)
            tone = "dim" if a == b else ds.cosine_style(value)
            cells.append(Text(ds.cosine(value), style=tone))
        table.add_row(a, *cells)
    return table


def _pair_conflicts(result: DiffMatrix) -> Group | None:
    if not result.conflicts:
        return None
    table = _table()
    for name in ("losses", "cosine", "shared", "most opposed variable"):
        table.add_column(name, overflow="fold", justify="right" if name == "cosine" else "left")
    for d in result.conflicts:
        worst = d.conflicts[0] if d.conflicts else None
        opposed = f"{worst.variable} ({ds.cosine(worst.cosine)})" if worst else "-"
        table.add_row(f"{d.loss_a} × {d.loss_b}",
                      Text(ds.cosine(d.cosine), style=ds.cosine_style(d.cosine)),
                      str(len(d.shared)), opposed)  # fmt: skip
    return _section(_CONFLICTS, Whole(table))


def matrix_renderable(result: DiffMatrix) -> Group:
    """The cosine matrix as rich renderables (also ``DiffMatrix.__rich__``)."""
    parts: list[Any] = [_title(result.report, "every pair of losses"), Text()]
    if len(result.losses) < 2:
        parts += [Text("only one loss: nothing to compare", style="yellow"), Text()]
    else:
        caption = "whole-model cosine over the variables both losses reach; - : none shared"
        parts += [_matrix(result), Text(caption, style="dim")]
    extra = _pair_conflicts(result)
    if extra is not None:
        parts += [Text(), extra]
    parts += [*_notes(result.report), Text(), Text(result.summary(), style="bold")]
    return Group(*parts)


def _notes(report: m.Report) -> list[Text]:
    """Every note of the report the diff was made from (the same words as inspect's)."""
    rows = style.note_rows(report)
    return (
        [Text()] + [Text(f"note{f' ({loss})' if loss else ''}: {n}") for loss, n in rows]
        if rows
        else []
    )


def render(result: DiffReport | DiffMatrix, *, color: bool = False, width: int = 120) -> str:
    """A diff, or the matrix of every pair, as a terminal table."""
    if isinstance(result, DiffMatrix):
        return to_text(matrix_renderable(result), color=color, width=width)
    return to_text(diff_renderable(result), color=color, width=width)
