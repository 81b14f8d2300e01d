"""The losses x variables matrix laid out for a width: no name is ever cut.

A variable's name is what tells two rows apart, so it is never shortened. When the losses do
not fit beside it, they are split into groups printed one below the other (each repeating the
variable column); when not even one loss fits beside the longest name, the shape column goes,
and then each name gets a line of its own with its cells on the line below. Lines carry no
trailing blanks.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.text import Text

from gradscope._src.report import style
from gradscope._src.report.rows import Row
from gradscope._src.results import report as m

GAP = 2


def lines(report: m.Report, rows: Sequence[Row], width: int) -> list[Text]:
    """The matrix as lines of (styled) text no wider than ``width`` where names allow."""
    names = [loss.name for loss in report.losses]
    values = [style.number(loss.value) for loss in report.losses]
    widths = [
        max(cell_len(names[i]), cell_len(values[i]), *(cell_len(r.cells[i]) for r in rows))
        for i in range(len(names))
    ]
    detail_w = max([cell_len("shape"), *(cell_len(r.detail) for r in rows)])
    label_w = max([cell_len("variable"), *(cell_len(r.label) for r in rows)])
    if label_w + GAP + detail_w + sum(w + GAP for w in widths) > width:
        # a collapsed run's label (``first … last``) that is longer gets a line of its own
        singles = [cell_len(r.label) for r in rows if len(r.variables) == 1]
        label_w = max([cell_len("variable"), *singles])
    detail = label_w + GAP + detail_w + GAP + (max(widths) if widths else 0) <= width
    lead = label_w + GAP + (detail_w + GAP if detail else 0)
    if widths and lead + max(widths) > width and not detail:
        return _stacked(names, values, widths, rows, width)
    out: list[Text] = []
    chunks = _chunks(widths, width - lead)
    for number, chunk in enumerate(chunks):
        if len(chunks) > 1:
            out += [Text()] if number else []
            out.append(Text(_losses_heading(chunk, len(names)), style="dim"))
        out += _block(names, values, widths, rows, chunk, label_w, detail_w if detail else None)
    return out


def _chunks(widths: Sequence[int], room: int) -> list[list[int]]:
    """Loss indices in groups whose columns fit in ``room`` (at least one loss per group)."""
    chunks: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(widths):
        if chunks[-1] and used + w > room:
            chunks.append([])
            used = 0
        chunks[-1].append(i)
        used += w + GAP
    return chunks if chunks[0] else []


def _losses_heading(chunk: Sequence[int], total: int) -> str:
    first, last = chunk[0] + 1, chunk[-1] + 1
    which = f"loss {first}" if first == last else f"losses {first}-{last}"
    return f"{which} of {total}"


def _block(
    names: Sequence[str],
    values: Sequence[str],
    widths: Sequence[int],
    rows: Sequence[Row],
    chunk: Sequence[int],
    label_w: int,
    detail_w: int | None,
) -> list[Text]:
    head1, head2 = Text(" " * label_w), Text("variable".ljust(label_w), style="bold")
    if detail_w is not None:
        head1.append(" " * (GAP + detail_w))
        head2.append(" " * GAP + "shape".ljust(detail_w), style="bold")
    for i in chunk:
        head1.append(" " * GAP + _pad(names[i], widths[i]), style="bold")
        head2.append(" " * GAP + _pad(values[i], widths[i]), style="bold")
    out = [head1, head2]
    for row in rows:
        line = Text(_pad(row.label, label_w), style=_label_style(row))
        if cell_len(row.label) > label_w:
            out.append(_whole(Text(row.label)))
            line = Text(" " * label_w)
        if detail_w is not None:
            line.append(" " * GAP + _pad(row.detail, detail_w), style="dim")
        for i in chunk:
            line.append(" " * GAP)
            line.append(_pad(row.cells[i], widths[i]), style=_cell_style(row, i))
        out.append(line)
    return [_rstrip(t) for t in out]


def _stacked(
    names: Sequence[str],
    values: Sequence[str],
    widths: Sequence[int],
    rows: Sequence[Row],
    width: int,
) -> list[Text]:
    """Each name on its own line, its cells below it, indented (names longer than the width)."""
    indent = 2
    chunks = _chunks(widths, width - indent)
    out: list[Text] = []
    for chunk in chunks:
        head1, head2 = Text(" " * indent), Text(" " * indent)
        for i in chunk:
            head1.append(_pad(names[i], widths[i]) + " " * GAP, style="bold")
            head2.append(_pad(values[i], widths[i]) + " " * GAP, style="bold")
        out += [_rstrip(head1), _rstrip(head2)]
    for row in rows:
        out.append(_whole(Text(f"{row.label}  {row.detail}", style=_label_style(row))))
        for chunk in chunks:
            line = Text(" " * indent)
            for i in chunk:
                line.append(_pad(row.cells[i], widths[i]), style=_cell_style(row, i))
                line.append(" " * GAP)
            out.append(_rstrip(line))
    return out


def _whole(text: Text) -> Text:
    """A line that is never wrapped or cropped: a name longer than the terminal stays one
    line (the terminal wraps it; a CI log keeps it whole for grep)."""
    text.no_wrap, text.overflow = True, "ignore"
    return text


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cell_len(text))


def _rstrip(text: Text) -> Text:
    text.rstrip()
    return text


def _label_style(row: Row) -> str:
    return "red" if row.never_trained or any(row.problems) else ""


def _cell_style(row: Row, i: int) -> str:
    return style.cell_style(row.statuses[i], row.problems[i])


#: Cells are (text, style); the last column of ``columns`` wraps, the others never do.
Cell = tuple[str, str]
#: The narrowest the wrapping column gets before the table is stacked instead.
MIN_LAST = 40
#: A last cell this short (a footnote mark) stays on its row's line when the rows are stacked.
SHORT_LAST = 6


def columns(
    headers: Sequence[str] | None,
    rows: Sequence[Sequence[Cell]],
    width: int,
    indent: int = 1,
    min_last: int = MIN_LAST,
    names_first: bool = False,
) -> list[Text]:
    """A table whose columns but the last keep their width (names, places); the last wraps in
    the room left. When not even ``min_last`` columns are left for it, each row's fixed
    cells share a line and the last column follows below, indented; with ``names_first`` (a
    first column of names, short cells after them), a first cell too long for the room (a
    long name, a group ``first … last``) goes whole on a line of its own above its row
    instead, and the columns keep their alignment."""
    count = len(headers) if headers else len(rows[0]) if rows else 0
    heads = list(headers or [""] * count)
    fixed = [
        max([cell_len(heads[i]), *(cell_len(r[i][0]) for r in rows)]) for i in range(count - 1)
    ]
    lead = indent + sum(w + GAP for w in fixed)
    if width - lead < min_last:
        room = width - min_last - (lead - fixed[0]) if fixed else -1  # the first column's
        if not names_first or room < 0:
            return _stacked_rows(headers, rows, width, indent)
        first = max([0, *(n for r in rows if (n := cell_len(r[0][0])) <= room)])
        lead -= fixed[0] - first
        fixed[0] = first
    out: list[Text] = []
    if headers and fixed and cell_len(heads[0]) > fixed[0]:  # its own line, as the names
        out.append(Text(" " * indent + heads[0], style="bold"))
        heads[0] = ""
    if headers:
        head = Text(" " * indent)
        for i, name in enumerate(heads):
            head.append(_pad(name, fixed[i]) + " " * GAP if i < count - 1 else name, style="bold")
        out.append(_rstrip(head))
    for row in rows:
        if fixed and cell_len(row[0][0]) > fixed[0]:  # a long first cell: a line of its own
            out.append(_rstrip(Text(" " * indent).append(row[0][0], style=row[0][1])))
            row = [("", ""), *row[1:]]
        last_text, last_style = row[-1]
        wrapped = (
            Text(last_text, style=last_style).wrap(_console(), width - lead)
            if last_text
            else [Text()]
        )
        for n, piece in enumerate(wrapped):
            line = Text(" " * indent)
            for i, (text, cell_style) in enumerate(row[:-1]):
                line.append(_pad(text if n == 0 else "", fixed[i]) + " " * GAP, style=cell_style)
            line.append_text(piece)
            out.append(_rstrip(line))
    return out


def _stacked_rows(
    headers: Sequence[str] | None, rows: Sequence[Sequence[Cell]], width: int, indent: int
) -> list[Text]:
    """Rows too wide for columns: each row's fixed cells share a line (the first cell alone on
    its own when they do not fit on one), the last column after them or below, indented."""
    out: list[Text] = []
    if headers:
        out.append(Text(" " * indent + "  ".join(headers[:-1]) + f" / {headers[-1]}", style="bold"))
    for row in rows:
        line = Text(" " * indent)
        cells = row[:-1]
        if cells and indent + sum(cell_len(t) + GAP for t, _ in cells) > width:
            out.append(_rstrip(Text(" " * indent).append(cells[0][0], style=cells[0][1])))
            line, cells = Text(" " * (indent + 2)), cells[1:]
        for text, cell_style in cells:
            line.append(text, style=cell_style)
            line.append(" " * GAP)
        last_text, last_style = row[-1]
        if cell_len(last_text) <= SHORT_LAST and line.cell_len + cell_len(last_text) <= width:
            out.append(_rstrip(line.append(last_text, style=last_style)))  # a mark: ``[1]``
            continue
        out.append(_rstrip(line))
        room = max(width - indent - 4, MIN_LAST)
        for piece in Text(last_text, style=last_style).wrap(_console(), room):
            out.append(_rstrip(Text(" " * (indent + 4)).append_text(piece)))
    return out


def _console() -> Console:
    return Console(width=10_000, color_system=None, highlight=False, emoji=False)


class Whole:
    """A rich table of short cells (a name, numbers) that is never shortened: laid out at the
    console's width when it fits, else at its natural width (the terminal wraps the long
    lines; nothing is cut with an ellipsis)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        need = Measurement.get(console, options.update_width(10_000), self.renderable).maximum
        width = max(options.max_width, need)
        yield from console.render(self.renderable, options.update_width(width))
