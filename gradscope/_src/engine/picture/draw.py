"""The gradient-flow picture of one loss as plain data: boxes, the links between them, and what
crosses each link (gradient, value only, or a cut).

The picture is the part of the traced graph that lies on forward paths from the variables to
the loss; everything else is left out. Ops are collapsed into boxes: for a spec, one box per
spec node; for a Python target, one box per name scope that holds a layer (``--expand``: one
box per op). A link between two boxes is classified from its op-level edges exactly as the
cut analysis in ``flow.find_cuts`` classifies them, so the red links of a picture are the cut
points of the report. Nothing here imports TensorFlow; ``picture_hook`` fills in the facts
that need it (sparse gradients, NaN checks).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from gradscope._src.engine.picture.grouping import Grouping, GroupKey, Label
from gradscope._src.engine.picture.links import Classifier, OpEdge, blame
from gradscope._src.engine.picture.scene import Scene
from gradscope._src.results.facts import CutPoint
from gradscope._src.results.picture import (
    CUT,
    GRADIENT,
    LOSS,
    OP,
    VALUE,
    VARIABLE,
    Box,
    Link,
    Picture,
)

__all__ = ["CUT", "GRADIENT", "LOSS", "OP", "VALUE", "VARIABLE", "Box", "Draft", "Link",
           "Picture", "Scene", "draw"]  # fmt: skip

_RANK = {GRADIENT: 0, CUT: 1, VALUE: 2}


@dataclass(frozen=True)
class Draft:
    """A picture before its NaN checks ran: ``checks[i]`` are the tensors behind link ``i``."""

    picture: Picture
    checks: tuple[tuple[int, ...], ...]

    def finish(self, finite: Sequence[bool]) -> Picture:
        """The picture with links whose gradient is not finite marked ``nan``."""
        links = tuple(
            replace(link, nan=not ok) if link.flow == GRADIENT else link
            for link, ok in zip(self.picture.links, finite, strict=True)
        )
        return replace(self.picture, links=links)


def draw(scene: Scene, *, expand: bool = False) -> Draft:
    """The picture of ``scene.loss``: boxes on forward paths and classified links.

    Args:
        scene: the traced graph and what the gradient pass found for the loss.
        expand: one box per TensorFlow op instead of one per spec node or layer.
    """
    graph = scene.graph
    on_path = [bool(r and s) for r, s in zip(scene.reach, scene.all_sets, strict=True)]
    grouping = Grouping(
        graph, scene.names, on_path, scene.handle_ops, scene.variables,
        scene.locate, scene.describe, expand,
    )  # fmt: skip
    classify = Classifier(scene)
    crossing: list[OpEdge] = []
    inside: dict[int, list[int]] = defaultdict(list)  # op -> its producers in the same box
    inner: list[tuple[int, int, CutPoint]] = []  # cuts inside a box: (producer, op, cut)
    for o, op in enumerate(graph.ops):
        if not on_path[o]:
            continue
        links: list[tuple[int | None, int]] = [
            (t, graph.producer[t]) for t in graph.value_inputs(op)
        ]
        links += [(None, w) for w in op.assign_preds]
        for t, p in links:
            if not on_path[p]:
                continue
            flow_, cut = classify.edge(t, o)
            if grouping.key(p) != grouping.key(o):
                crossing.append(OpEdge(p, o, t, flow_, cut))
            elif cut is not None:
                inner.append((p, o, cut))
            inside[o].append(p)
    unshown = blame(crossing, inside, inner, classify)
    box_cuts: dict[GroupKey, list[CutPoint]] = defaultdict(list)
    for _p, o, cut in unshown:
        if scene.visible(o) and cut not in box_cuts[grouping.key(o)]:
            box_cuts[grouping.key(o)].append(cut)
    return _assemble(scene, grouping, crossing, box_cuts, expand)


def _assemble(
    scene: Scene,
    grouping: Grouping,
    crossing: list[OpEdge],
    box_cuts: dict[GroupKey, list[CutPoint]],
    expand: bool,
) -> Draft:
    keys = grouping.ordered()
    ids = {key: f"v{key[1]}" for key in keys if key[0] == VARIABLE}
    ids.update({k: f"n{n}" for n, k in enumerate(k for k in keys if k[0] != VARIABLE)})
    boxes = [_box(grouping.label(key), ids[key], tuple(box_cuts[key])) for key in keys]
    boxes.sort(key=lambda b: (b.kind != VARIABLE, b.index if b.kind == VARIABLE else 0))
    merged: dict[tuple[str, str], list[OpEdge]] = {}
    for edge in crossing:
        pair = (ids[grouping.key(edge.p)], ids[grouping.key(edge.o)])
        merged.setdefault(pair, []).append(edge)
    links, checks = [], []
    for (a, b), edges in merged.items():
        link, check = _link(a, b, edges, scene.sparse)
        links.append(link)
        checks.append(check)
    boxes.append(Box("loss", LOSS, scene.loss))
    if scene.target_op in grouping.keys:  # else no variable reaches the loss at all
        links.append(Link(ids[grouping.key(scene.target_op)], "loss", GRADIENT))
        checks.append(())
    shown = {b.index for b in boxes if b.kind == VARIABLE}
    off = tuple(v for i, v in enumerate(scene.variables) if i not in shown)
    picture = Picture(scene.loss, tuple(boxes), tuple(links), off, expand)
    return Draft(picture, tuple(checks))


def _link(a: str, b: str, edges: list[OpEdge], sparse: set[int]) -> tuple[Link, tuple[int, ...]]:
    """One link from its op-level edges: gradient if any carries it, else cut if any is."""
    flow_ = min((e.flow for e in edges), key=_RANK.__getitem__)
    carrying = [e.t for e in edges if e.flow == GRADIENT and e.t is not None]
    cuts = tuple(dict.fromkeys(e.cut for e in edges if e.cut is not None)) if flow_ == CUT else ()
    is_sparse = any(t in sparse for t in carrying)
    return Link(a, b, flow_, is_sparse, cuts=cuts), tuple(dict.fromkeys(carrying))


def _box(label: Label, box_id: str, cuts: tuple[CutPoint, ...]) -> Box:
    return Box(box_id, label.kind, label.name, label.op, label.source, label.scope,
               label.index, cuts)  # fmt: skip
