"""A big model's picture reduced to the paths that matter, so it reads at 100% zoom.

A 50-layer model draws 80 variable boxes and 50 layer boxes with every edge spanning the
page. Past ``LIMIT`` boxes the picture keeps what tells the story: the loss, every box a cut
or a NaN touches, and the variables whose gradient is not ``ok``; each connected run of the
other (healthy) layer boxes becomes one box with a count (``52 layers``), and variables
that read the same (status, where they lead) become one box with a count. Every cut link is
kept as it was, so the red links still are the report's cut points. Nothing is decided here
that the picture did not already say: a merged link carries gradient if any link it merges
did.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

from gradscope._src.results import report as m
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

#: Pictures with more boxes than this are reduced.
LIMIT = 40
#: Variables that read the same are one box from this many on.
GROUP_FROM = 3

_RANK = {GRADIENT: 0, CUT: 1, VALUE: 2}


def simplify(picture: Picture, loss: m.LossResult, limit: int = LIMIT) -> Picture:
    """``picture`` itself when it has ``limit`` boxes or fewer (or shows every op), else the
    reduced picture (``Picture.reduced`` is then the number of boxes it stands for)."""
    if len(picture.boxes) <= limit or picture.expanded:
        return picture
    keep = _kept(picture, loss)
    merged = _components([b for b in picture.boxes if b.id not in keep and b.kind == OP], picture)
    ids = {box_id: group.id for group in merged for box_id in group.members}
    boxes = [b for b in picture.boxes if b.id in keep or b.kind == VARIABLE] + merged
    links = _links(picture.links, ids)
    boxes, links = _group_variables(boxes, links, loss)
    return replace(picture, boxes=tuple(boxes), links=tuple(links), reduced=len(picture.boxes))


def _kept(picture: Picture, loss: m.LossResult) -> set[str]:
    """Boxes drawn as they are: the loss, both ends of a cut or NaN link, boxes holding a
    cut, and the variables whose gradient is not ok."""
    keep = {b.id for b in picture.boxes if b.kind == LOSS or b.cuts}
    for link in picture.links:
        if link.flow == CUT or link.nan:
            keep |= {link.src, link.dst}
    names = {p.variable: p.status for p in loss.pairs}
    keep |= {b.id for b in picture.boxes if b.kind == VARIABLE and names.get(b.name) != m.OK}
    return keep


def _components(boxes: list[Box], picture: Picture) -> list[Box]:
    """Each connected run of ``boxes`` (links in either direction) as one box, in order."""
    ids = {b.id for b in boxes}
    parent = {i: i for i in ids}

    def find(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for link in picture.links:
        if link.src in ids and link.dst in ids:
            parent[find(link.src)] = find(link.dst)
    runs: dict[str, list[Box]] = defaultdict(list)
    for b in boxes:
        runs[find(b.id)].append(b)
    out = []
    for number, run in enumerate(runs.values()):
        if len(run) == 1:
            out.append(run[0])
            continue
        flows = [link.flow for link in picture.links if link.src in ids and link.dst in ids
                 and find(link.src) == find(run[0].id)]  # fmt: skip
        op = "gradient flows" if GRADIENT in flows else "no gradient"
        out.append(Box(f"group{number}", OP, f"{len(run)} layers", op=op,
                       members=tuple(b.id for b in run),
                       scope=f"{run[0].name} … {run[-1].name}"))  # fmt: skip
    return out


def _links(links: tuple[Link, ...], ids: dict[str, str]) -> list[Link]:
    """Links between the new boxes: one per pair of ends, carrying gradient if any did."""
    best: dict[tuple[str, str], Link] = {}
    for link in links:
        src, dst = ids.get(link.src, link.src), ids.get(link.dst, link.dst)
        if src == dst:
            continue
        moved = replace(link, src=src, dst=dst)
        old = best.get((src, dst))
        if old is None or _RANK[moved.flow] < _RANK[old.flow]:
            best[(src, dst)] = moved
    return list(best.values())


def _group_variables(
    boxes: list[Box], links: list[Link], loss: m.LossResult
) -> tuple[list[Box], list[Link]]:
    """Variables with the same status and the same outgoing links (ends and flows) as one box."""
    status = {p.variable: p.status for p in loss.pairs}
    outgoing: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for link in links:
        outgoing[link.src].append((link.dst, link.flow))
    alike: dict[tuple[object, ...], list[Box]] = defaultdict(list)
    for b in boxes:
        if b.kind == VARIABLE and not any(link.flow == CUT for link in links if link.src == b.id):
            alike[(status.get(b.name), tuple(sorted(outgoing[b.id])))].append(b)
    rename: dict[str, str] = {}
    groups: dict[str, Box] = {}
    for same in alike.values():
        if len(same) < GROUP_FROM:
            continue
        first = same[0]
        group = replace(first, id=f"{first.id}_all", members=tuple(b.name for b in same))
        groups[first.id] = group
        rename |= {b.id: group.id for b in same}
    kept = [groups.get(b.id, b) for b in boxes if b.id not in rename or b.id in groups]
    return kept, _links(tuple(links), rename)
