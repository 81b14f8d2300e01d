"""A loss's gradient-flow picture as a Mermaid flowchart, which GitHub draws in comments.

``picture`` is the flowchart (``gradscope graph -o x.mmd``); ``embed`` wraps it in a fenced
```` ```mermaid ```` block with a caption, and ``sections`` embeds one per loss with a problem,
for the markdown reports of ``inspect`` and ``check``. Links keep the meaning of the DOT
picture: solid gradient, grey value only, red cut (labelled), dashed sparse, orange NaN.
"""

from __future__ import annotations

from gradscope._src.report import palette
from gradscope._src.results import report as m
from gradscope._src.results.picture import GRADIENT, LOSS, VARIABLE, Box, Link, Picture

#: GitHub refuses diagrams past about 50,000 characters or 500 links; stay well below.
MAX_LINKS = 300
MAX_CHARS = 40_000

_SHAPES = {VARIABLE: ('["', '"]'), LOSS: ('(["', '"])')}


def text(value: str) -> str:
    """Label text for a quoted Mermaid label: entity codes for the characters it treats
    specially, ``<br/>`` for line breaks."""
    for char, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        value = value.replace(char, code)
    return value.replace("\n", "<br/>")


def _box(box: Box, report: m.Report, loss: m.LossResult) -> str:
    start, end = _SHAPES.get(box.kind, ('("', '")'))
    return f"  {box.id}{start}{text(chr(10).join(palette.box_lines(box, report, loss)))}{end}"


def _link(link: Link, spec: str) -> str:
    arrow = "-.->" if link.flow == GRADIENT and link.sparse else "-->"
    label = palette.link_label(link, spec)
    return f"  {link.src} {arrow}" + (f'|"{text(label)}"|' if label else "") + f" {link.dst}"


def _styles(pic: Picture, loss: m.LossResult) -> list[str]:
    lines = []
    by_color: dict[str, list[str]] = {}
    for index, link in enumerate(pic.links):
        by_color.setdefault(palette.link_color(link), []).append(str(index))
    for color, indices in by_color.items():
        wide = color in (palette.CUT_COLOR, palette.NAN_COLOR)
        width = "stroke-width:2.5px," if wide else ""
        lines.append(f"  linkStyle {','.join(indices)} stroke:{color},{width}color:{color}")
    classes: dict[str, list[str]] = {}
    for box in pic.boxes:
        if box.kind == VARIABLE:
            classes.setdefault(palette.status_class(loss.pair(box.name).status), []).append(box.id)
        elif box.kind != LOSS:
            classes.setdefault("op", []).append(box.id)
    for name, ids in classes.items():
        fill, border, ink = palette.CLASS_COLORS.get(name, palette.OP_COLORS)
        width = "1px" if name == "op" else "2px"
        lines.append(
            f"  classDef {name} fill:{fill},stroke:{border},color:{ink},stroke-width:{width}"
        )
        lines.append(f"  class {','.join(ids)} {name}")
    fill, border, ink = palette.LOSS_COLORS
    lines.append(f"  classDef loss fill:{fill},stroke:{border},color:{ink},stroke-width:2px")
    lines.append("  class loss loss")
    cut = sorted(pic.cut_boxes - {"loss"}, key=[b.id for b in pic.boxes].index)
    if cut:
        lines.append(f"  classDef cut stroke:{palette.CUT_COLOR},stroke-width:2.5px")
        lines.append(f"  class {','.join(cut)} cut")
    return lines


def picture(report: m.Report, loss_name: str) -> str:
    """The Mermaid flowchart of one loss's picture (from a run with ``pictures=True``)."""
    pic = palette.picture_of(report, loss_name)
    loss = report.loss(loss_name)
    lines = [
        f"%% gradscope graph {report.spec} --loss {report.loss_option(loss_name)}",
        "flowchart LR",
    ]
    lines += [_box(b, report, loss) for b in pic.boxes]
    lines += [_link(link, report.spec) for link in pic.links]
    lines += _styles(pic, loss)
    lines += _off_path(pic, loss, report)
    return "\n".join(lines) + "\n"


def _off_path(pic: Picture, loss: m.LossResult, report: m.Report) -> list[str]:
    """The variables no path joins to the loss, a box per layer, in a dashed red subgraph:
    the unused head is in the picture a pull request shows."""
    boxes = palette.off_path_boxes(pic, loss, report)
    if not boxes:
        return []
    lines = [f'  subgraph off_path["{text("not reached by " + pic.loss)}"]']
    lines += [f'    {box_id}["{text(chr(10).join(label))}"]' for box_id, label, _ in boxes]
    lines.append("  end")
    lines.append(f"  style off_path fill:none,stroke:{palette.CUT_COLOR},stroke-dasharray:5 5,"
                 f"color:{palette.CUT_COLOR}")  # fmt: skip
    for status in dict.fromkeys(status for _, _, status in boxes):
        fill, border, ink = palette.CLASS_COLORS[status]
        ids = ",".join(box_id for box_id, _, s in boxes if s == status)
        lines.append(f"  classDef off_{status} fill:{fill},stroke:{border},color:{ink},"
                     "stroke-width:2px,stroke-dasharray:4 3")  # fmt: skip
        lines.append(f"  class {ids} off_{status}")
    return lines


def problem_losses(report: m.Report) -> list[str]:
    """Losses whose picture explains a problem: a problem names the loss, or a never-trained
    variable lies on one of its paths and the loss differentiates it (the picture shows
    where it was cut). In report order."""
    named = {p.loss for p in report.failures if p.loss is not None}
    stranded = {p.variable for p in report.failures if p.loss is None and p.variable}
    out = []
    for loss in report.losses:
        pic = report.picture(loss.name)
        if pic is None:
            continue
        shown = {b.name for b in pic.boxes if b.kind == VARIABLE}
        asked = {n for n in shown if loss.pair(n).status not in (m.EXCLUDED, m.FROZEN)}
        if loss.name in named or stranded & asked:
            out.append(loss.name)
    return out


def embed(report: m.Report, loss_name: str) -> str:
    """A fenced ```` ```mermaid ```` block of one loss's picture with a one-line caption, for
    markdown (a GitHub comment draws it); a short note instead when it is too big to draw."""
    pic = palette.picture_of(report, loss_name)
    chart = picture(report, loss_name)
    head = f"**Gradient flow of `{loss_name}`**"
    if len(pic.links) > MAX_LINKS or len(chart) > MAX_CHARS:
        return (
            f"{head}: {len(pic.boxes)} boxes, too many to draw here; run "
            f"`gradscope graph {report.spec} --loss {report.loss_option(loss_name)} "
            f"-o {loss_name}.svg`\n"
        )
    off = palette.off_path_text(pic)
    tail = f"<sub>{palette.LEGEND}{' · ' + off if off else ''}</sub>"
    return f"{head}\n\n```mermaid\n{chart}```\n\n{tail}\n"


def sections(report: m.Report) -> list[str]:
    """Markdown lines embedding the picture of every loss with a problem (none without
    pictures in the report)."""
    lines: list[str] = []
    for name in problem_losses(report):
        lines += ["", *embed(report, name).rstrip("\n").split("\n")]
    return lines
