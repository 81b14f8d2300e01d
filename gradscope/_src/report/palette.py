"""Colours and words the pictures share (DOT, Mermaid, HTML), so every format reads alike."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath

from gradscope._src.location import Location
from gradscope._src.report import style
from gradscope._src.results import report as m
from gradscope._src.results.cut import STOP_TYPES
from gradscope._src.results.facts import CutPoint
from gradscope._src.results.picture import CUT, GRADIENT, LOSS, VARIABLE, Box, Link, Picture
from gradscope._src.results.status import CutKind

#: Link colours.
GRADIENT_COLOR = "#37474f"
VALUE_COLOR = "#b0bec5"
CUT_COLOR = "#d32f2f"
NAN_COLOR = "#ef6c00"

#: Box colours: (fill, border, text).
OP_COLORS = ("#ffffff", "#78909c", "#263238")
LOSS_COLORS = ("#bbdefb", "#1565c0", "#0d47a1")
_OK = ("#c8e6c9", "#2e7d32", "#1b5e20")
_ZERO = ("#fff9c4", "#f9a825", "#5d4037")
_NAN = ("#ffe0b2", NAN_COLOR, "#bf360c")
_NONE = ("#ffcdd2", "#c62828", "#b71c1c")
_IDLE = ("#eceff1", "#90a4ae", "#546e7a")

#: CSS class per status (``status-none`` for every ``none:*``); the HTML table uses them too.
STATUS_CLASS: dict[str, str] = {
    m.OK: "ok",
    m.ZERO: "zero",
    m.NAN: "nan",
    m.EXCLUDED: "idle",
    m.FROZEN: "idle",
}

CLASS_COLORS = {"ok": _OK, "zero": _ZERO, "nan": _NAN, "none": _NONE, "idle": _IDLE}

LEGEND = (
    "solid: gradient flows · grey: value only, no gradient comes back · "
    "red ✂: the gradient is cut here · dashed: sparse gradient · orange: NaN or Inf"
)


def status_class(status: str) -> str:
    """``ok``, ``zero``, ``nan``, ``none`` or ``idle`` (excluded, frozen)."""
    return STATUS_CLASS.get(status, "none" if m.is_none(status) else "idle")


def box_colors(box: Box, loss: m.LossResult) -> tuple[str, str, str]:
    """``(fill, border, text)`` of a box: variables by their status, the loss in blue."""
    if box.kind == VARIABLE:
        return CLASS_COLORS[status_class(loss.pair(box.name).status)]
    if box.members and box.op != "gradient flows":
        return _IDLE  # healthy layers gathered, that pass no gradient
    return LOSS_COLORS if box.kind == LOSS else OP_COLORS


def line_of(source: str, spec: str) -> str:
    """``line 23`` within the report's own spec, else ``model.py:42``; empty when unknown."""
    at = Location.parse(source)
    if at is None:
        return source
    return f"line {at.line}" if at.file == spec else f"{PurePath(at.file).name}:{at.line}"


def box_lines(box: Box, report: m.Report, loss: m.LossResult) -> list[str]:
    """The lines of a box's label: its name, then its op and line, status, or value."""
    if box.kind == VARIABLE and box.members:  # variables that read alike, gathered
        return _gathered(box.members, report, loss)
    if box.kind == VARIABLE:
        attribute = next((v.attribute for v in report.variables if v.name == box.name), "")
        return [
            box.name,
            *([f"({attribute})"] if attribute else []),
            style.cell(loss.pair(box.name)),
        ]
    if box.members:  # healthy layers gathered
        first, _, last = box.scope.partition(" … ")
        return [box.name, box.op, f"{first} …", last]
    if box.kind == LOSS:
        return [box.name, f"= {style.number(loss.value)}"]
    where = line_of(box.source, report.spec)
    name = layer_name(box.name, report)
    name = labelled_layer(name, report)
    if len(box.op) + len(where) > 28:  # a long op name: the line goes below, not beside
        lines = [name, box.op, where]
    else:
        lines = [name, " · ".join(x for x in (box.op, where) if x)]
    lines = [x for x in lines if x]
    lines += [cut_label(c, report.spec) for c in box.cuts]
    return lines


def _gathered(members: Sequence[str], report: m.Report, loss: m.LossResult) -> list[str]:
    """A box of variables that read alike, as the table's group row reads: the status with
    the smallest and largest norm (a vanishing member is not hidden), the first and last
    variable, the attributes of their layers."""
    from gradscope._src.report.rows import group_cell, owners

    pairs = [loss.pair(name) for name in members]
    norms = [p.norm for p in pairs if p.norm is not None]
    cell = group_cell([style.cell(p) for p in pairs], norms)
    attributes = {v.name: v.attribute for v in report.variables}
    held = owners(members, [a for n in members if (a := attributes.get(n, ""))])
    return [f"{len(members)} variables: {cell}", f"{members[0]} …", members[-1],
            *([f"({held})"] if held else [])]  # fmt: skip


_CALL_SUFFIX = re.compile(r"_\d+$")


def layer_name(scope: str, report: m.Report) -> str:
    """The layer a box's TensorFlow name scope belongs to, as the report's variables name it.

    TensorFlow makes each call of a layer a new scope (``dense_1`` for the second call of
    ``dense``, ``dense_1_2`` for the third of ``dense_1``); a box labelled so matches no
    variable. A scope that is no variable's layer, but is one once call suffixes are taken
    off, is shown as that layer (``dense_1_2`` -> ``dense_1`` when ``dense_1/kernel`` is a
    variable); any other name is kept (``Sum``, a layer with no variables).
    """
    parts = [v.name.split("/")[:-1] for v in report.variables]
    layers = {"/".join(p[:i]) for p in parts for i in range(1, len(p) + 1)}
    known = layers | {layer.rsplit("/", 1)[-1] for layer in layers}
    candidate = scope
    while candidate not in known:
        if _CALL_SUFFIX.search(candidate) is None:
            return scope
        candidate = candidate.rsplit("_", 1)[0]
    return candidate


def labelled_layer(layer: str, report: m.Report) -> str:
    """A layer's name with the attribute the user's code holds it in, when its variables
    say one (``dense_3 (box_head)``, ``detector/dense_2 (heads[1])``, ``encoder
    (encoder)`` is left as ``encoder``)."""
    owners = {_attribute_at(layer, v.name, v.attribute) for v in report.variables} - {""}
    if len(owners) != 1:
        return layer
    owner = owners.pop()
    return layer if owner == layer.rsplit("/", 1)[-1] else f"{layer} ({owner})"


def _attribute_at(layer: str, name: str, attribute: str) -> str:
    """The attribute of ``layer`` (a scope on the variable's path ``name``: its layer, or an
    outer one) read from the variable's ``attribute``, matched from the end (the path's
    ``detector/encoder/dense/kernel`` and ``encoder.proj.kernel``: ``encoder`` is
    ``encoder``, ``dense`` is ``encoder.proj``); ``""`` when it does not say.

    Example:
        >>> _attribute_at("dense_2", "detector/dense_2/kernel", "heads[1].kernel")
        'heads[1]'
    """
    if not attribute:
        return ""
    parts, words = name.split("/"), attribute.split(".")
    scope = layer.split("/")
    for i in range(len(parts) - 1):
        if parts[max(0, i + 1 - len(scope)) : i + 1] != scope:
            continue
        below = len(parts) - 1 - i  # path steps from that scope down to the variable
        return ".".join(words[: len(words) - below]) if below < len(words) else ""
    return ""


def cut_label(cut: CutPoint, spec: str) -> str:
    """``✂ stop_gradient · line 27``, ``✂ assign · line 15``, ``✂ Round (no gradient) · …``."""
    if cut.kind == CutKind.STOPPED:
        what = "stop_gradient" if cut.op in STOP_TYPES else "stop_gradients (loss)"
    elif cut.kind == CutKind.ASSIGN:
        what = "assign"
    else:
        what = f"{cut.op} (no gradient)"
    where = line_of(cut.source, spec)
    return f"✂ {what}" + (f" · {where}" if where else "")


def link_label(link: Link, spec: str) -> str:
    """What a link says beside its line: its cuts, ``NaN`` or ``sparse``; mostly nothing."""
    if link.flow == CUT:
        return "\n".join(cut_label(c, spec) for c in link.cuts)
    if link.flow == GRADIENT and link.nan:
        return "NaN/Inf"
    return "sparse" if link.flow == GRADIENT and link.sparse else ""


def link_color(link: Link) -> str:
    if link.flow == CUT:
        return CUT_COLOR
    if link.flow == GRADIENT:
        return NAN_COLOR if link.nan else GRADIENT_COLOR
    return VALUE_COLOR


def off_path_text(picture: Picture, limit: int = 8) -> str:
    """``no path to loss_1: task2/w, task2/b`` (the first ``limit`` names), or empty."""
    names = list(picture.off_path)
    if not names:
        return ""
    shown = ", ".join(names[:limit])
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f"no path to {picture.loss}: {shown}{more}"


#: An unreached layer's box lists up to this many of its variables, then a count.
OFF_PATH_NAMES = 4
#: Unreached layers drawn one box each, up to this many; the rest share one box.
OFF_PATH_BOXES = 12


def off_path_boxes(
    picture: Picture, loss: m.LossResult, report: m.Report | None = None
) -> list[tuple[str, list[str], str]]:
    """The variables with no path to the loss, a box per layer (the head they sit in):
    ``(box id, label lines, status class)``. A layer is a variable's name up to its last
    ``/``; past ``OFF_PATH_BOXES`` layers the rest are counted in one box.

    Example:
        >>> from gradscope._src.results.picture import Picture
        >>> loss = m.LossResult("l", 1.0, (m.PairResult("aux/kernel", m.DISCONNECTED, None,
        ...     (8, 3), False), m.PairResult("aux/bias", m.DISCONNECTED, None, (3,), False)))
        >>> off_path_boxes(Picture("l", (), (), off_path=("aux/kernel", "aux/bias")), loss)
        [('off0', ['aux', 'kernel, bias', 'no path to l'], 'none')]
    """
    from gradscope._src.report.rows import layer_of

    layers: dict[str, list[str]] = {}
    for name in picture.off_path:
        layers.setdefault(layer_of(name), []).append(name)
    out: list[tuple[str, list[str], str]] = []
    items = list(layers.items())
    for index, (layer, names) in enumerate(items[:OFF_PATH_BOXES]):
        short = [n[len(layer) + 1 :] if n.startswith(layer + "/") else n for n in names]
        listed = ", ".join(short[:OFF_PATH_NAMES])
        if len(short) > OFF_PATH_NAMES:
            listed += f" and {len(short) - OFF_PATH_NAMES} more"
        label = labelled_layer(layer, report) if report is not None else layer
        lines = [label, listed, f"no path to {picture.loss}"] if listed != layer else [
            label, f"no path to {picture.loss}"]  # fmt: skip
        out.append((f"off{index}", lines, status_class(loss.pair(names[0]).status)))
    rest = [n for _, names in items[OFF_PATH_BOXES:] for n in names]
    if rest:
        lines = [f"{len(rest)} more variables", f"in {len(items) - OFF_PATH_BOXES} layers",
                 f"no path to {picture.loss}"]  # fmt: skip
        out.append((f"off{OFF_PATH_BOXES}", lines, status_class(loss.pair(rest[0]).status)))
    return out


def picture_of(report: m.Report, loss: str) -> Picture:
    """The picture of ``loss``, reduced to the paths that matter for a big model
    (``prune.simplify``); ValueError when the run drew none (``pictures=True``)."""
    from gradscope._src.report.prune import simplify

    picture = report.picture(loss)
    if picture is None:
        raise ValueError(f"the report has no picture of {loss!r}; run with pictures=True")
    return simplify(picture, report.loss(loss))
