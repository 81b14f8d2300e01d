"""A loss's gradient-flow picture in Graphviz's DOT language (``gradscope graph -o x.dot``).

Variables sit on the left, the loss on the right. Solid links carry gradient; grey ones carry
value but no gradient; red ones are cut (labelled with the kind of cut and its line); dashed
ones carry a sparse gradient; orange ones a gradient with NaN or Inf. Every node and edge has
a ``class`` (``variable ok``, ``cut``, ...) that the SVG keeps, for styling and for tests.
"""

from __future__ import annotations

from gradscope._src.report import palette
from gradscope._src.results import report as m
from gradscope._src.results.picture import CUT, GRADIENT, LOSS, VARIABLE, Box, Link, Picture

FONT = "Helvetica,Arial,sans-serif"


def quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, newlines as ``\\n`` (centred lines)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _left(lines: list[str]) -> str:
    """A DOT label of left-aligned lines (each ends with ``\\l``)."""
    return quote("\n".join(lines)).replace("\\n", "\\l")[:-1] + '\\l"'


def _attrs(**values: str | float) -> str:
    parts = [f"{k}={quote(v) if isinstance(v, str) else v}" for k, v in values.items()]
    return "[" + ", ".join(parts) + "]"


def _box(box: Box, report: m.Report, loss: m.LossResult, cut: bool) -> str:
    fill, border, text = palette.box_colors(box, loss)
    lines = palette.box_lines(box, report, loss)
    extra: dict[str, str | float] = {}
    if box.kind == VARIABLE:
        kind = f"variable {palette.status_class(loss.pair(box.name).status)}"
        extra = {"shape": "box", "style": "filled,bold"}
    elif box.kind == LOSS:
        kind = "loss"
        extra = {"shape": "oval", "style": "filled,bold"}
    else:
        kind = "op cut" if cut else "op"
    if cut:
        border, extra["penwidth"] = palette.CUT_COLOR, 2
    tooltip = box.scope or box.name
    return f"  {box.id} " + _attrs(
        label="\n".join(lines), fillcolor=fill, color=border, fontcolor=text,
        tooltip=tooltip, **{"class": kind}, **extra,
    ) + ";"  # fmt: skip


def _link(link: Link, spec: str) -> str:
    color = palette.link_color(link)
    values: dict[str, str | float] = {"color": color, "class": link.flow}
    label = palette.link_label(link, spec)
    if label:
        values.update(label=label, fontcolor=color)
    if link.flow == CUT:
        values["penwidth"] = 2
    if link.flow == GRADIENT and link.sparse:
        values["style"] = "dashed"
        values["class"] = "gradient sparse"
    if link.flow == GRADIENT and link.nan:
        values["penwidth"] = 2
        values["class"] = f"{values['class']} nan"
    return f"  {link.src} -> {link.dst} {_attrs(**values)};"


def picture(
    report: m.Report, loss_name: str, *, caption: bool = True, dpi: int | None = None
) -> str:
    """The DOT text of one loss's picture (``report`` must come from a run with pictures).

    Args:
        report: the report of a run with ``pictures=True``.
        loss_name: the loss to draw.
        caption: end with the loss, the legend and the variables with no path (a page that
            says those itself leaves it out).
        dpi: the resolution of a PNG laid out from it (Graphviz's own 96 when None).

    Example:
        >>> report = gradscope.inspect("configs/chained-heads.yaml", pictures=True)
        >>> print(dot.picture(report, "loss2_stopped"))  # doctest: +SKIP
        digraph "loss2_stopped" { ... n1 -> n2 [color="#d32f2f", ... label="✂ stop_gradient ..."]
    """
    pic = palette.picture_of(report, loss_name)
    loss = report.loss(loss_name)
    cut_boxes = pic.cut_boxes
    lines = [
        f"// gradscope graph {report.spec} --loss {report.loss_option(loss_name)}",
        f"digraph {quote(loss_name)} {{",
        "  graph " + _attrs(rankdir="TB" if pic.reduced else "LR", fontname=FONT, fontsize=10,
                            nodesep=0.25,
                            ranksep=0.5, labelloc="b", labeljust="l")[:-1]
        + (f", label={_left(_caption(report, pic))}" if caption else "")
        + (f", dpi={dpi}" if dpi else "") + "];",
        "  node " + _attrs(shape="box", style="rounded,filled", fontname=FONT, fontsize=11,
                           margin="0.12,0.05") + ";",
        "  edge " + _attrs(fontname=FONT, fontsize=9, arrowsize=0.7) + ";",
    ]  # fmt: skip
    lines += [_box(b, report, loss, b.id in cut_boxes) for b in pic.boxes]
    variables = " ".join(b.id for b in pic.boxes if b.kind == VARIABLE)
    if variables:
        lines.append(f"  {{ rank=source; {variables} }}")
    lines.append("  { rank=sink; loss }")
    lines += [_link(link, report.spec) for link in pic.links]
    lines += _off_path(pic, loss, report)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _off_path(pic: Picture, loss: m.LossResult, report: m.Report) -> list[str]:
    """The variables no path joins to the loss, a box per layer, in a dashed cluster beside
    the picture: an unused head is drawn, not only named in the caption."""
    boxes = palette.off_path_boxes(pic, loss, report)
    if not boxes:
        return []
    lines = ["  subgraph cluster_off_path {",
             "    " + _attrs(label=f"not reached by {pic.loss}", style="dashed,rounded",
                             color=palette.CUT_COLOR, fontcolor=palette.CUT_COLOR, fontname=FONT,
                             fontsize=10)[1:-1].replace(", ", "; ") + ";"]  # fmt: skip
    for box_id, label, status in boxes:
        fill, border, ink = palette.CLASS_COLORS[status]
        lines.append(f"    {box_id} " + _attrs(
            label="\n".join(label), fillcolor=fill, color=border, fontcolor=ink,
            shape="box", style="filled,dashed", **{"class": f"variable {status} off-path"},
        ) + ";")  # fmt: skip
    lines.append("  }")
    return lines


def _caption(report: m.Report, pic: Picture) -> list[str]:
    lines = [f"gradients of {pic.loss} ({report.spec})", palette.LEGEND]
    if pic.reduced:
        lines.append(
            f"{pic.reduced} boxes reduced to {len(pic.boxes)}: healthy layers and variables "
            "that read alike are gathered (--expand draws every op)"
        )
    off = palette.off_path_text(pic)
    return [*lines, off] if off else lines
