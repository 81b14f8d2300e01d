"""How gradient crosses one op-level edge of a picture: flows, carries value only, or is cut.

``Classifier`` asks ``cuts.crossing`` (the rule ``cuts.find_cuts`` applies) for each edge
``t -> o``, so a picture's red links are the report's cut points. ``blame`` moves a cut that
happens inside a box onto the link that enters the box.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.picture.scene import Scene
from gradscope._src.results.facts import CutPoint
from gradscope._src.results.picture import CUT, GRADIENT, VALUE


@dataclass
class OpEdge:
    """One op-level edge ``t -> o`` (``t`` None for an assign edge) between two boxes."""

    p: int
    o: int
    t: int | None
    flow: str
    cut: CutPoint | None


class Classifier:
    """Classifies op-level edges ``t -> o`` as ``flow.find_cuts`` does."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.arrive = flow.arrivals(scene.graph, scene.reach, scene.received)
        self.lost: dict[int, str] = {}  # ops where an integer path began (argmax, cast)
        for cut in scene.cuts:
            if not self.arrive[cut.op]:
                self.lost[cut.op] = cut.kind
        # Per op, the variables no earlier cut took: an edge past an earlier cut carries value
        # only. A scene made by hand (tests) gets them from the pass that finds cuts.
        self.live: list[int] = scene.live if scene.live is not None else []
        if scene.live is None:
            flow.find_cuts(scene.graph, scene.all_sets, scene.reach, scene.received,
                           scene.stop_ops, live_out=self.live)  # fmt: skip

    def edge(self, t: int | None, o: int) -> tuple[str, CutPoint | None]:
        """``(flow, cut point)`` of the edge from tensor ``t`` into op ``o``.

        ``t`` is None for an assign edge: a write feeding a later read of the same variable,
        which carries value and never gradient.
        """
        scene, graph = self.scene, self.scene.graph
        if t is None or not scene.all_sets[graph.producer[t]] & scene.mask:
            return VALUE, None
        if not self.arrive[o]:
            lost = graph.differentiable[t] and self.lost.get(o)
            return (CUT, self._point(o, lost)) if lost and self._first(t) else (VALUE, None)
        kind = flow.crossing(graph, o, t, scene.received, scene.stop_ops)
        if kind is None:
            return GRADIENT, None
        if kind == flow.INTEGER:
            return VALUE, None
        return (CUT, self._point(o, kind)) if self._first(t) else (VALUE, None)

    def _first(self, t: int) -> bool:
        """Whether tensor ``t`` carries a path no earlier cut took (find_cuts names a
        path where it was first cut; past that, an edge carries value only)."""
        return bool(self.live[self.scene.graph.producer[t]] & self.scene.mask)

    def could_carry(self, t: int | None) -> bool:
        """Whether gradient could cross tensor ``t`` for this loss, were it not cut."""
        graph = self.scene.graph
        if t is None or not self.scene.all_sets[graph.producer[t]] & self.scene.mask:
            return False
        return bool(graph.differentiable[t])

    def _point(self, o: int, kind: str) -> CutPoint:
        if self.scene.cut_point is not None:
            return self.scene.cut_point(o, kind)
        where = self.scene.locate(o)
        node, source = where if where is not None else (self.scene.names[o], "")
        return CutPoint(node=node, op=self.scene.graph.ops[o].type, kind=kind, source=source)


def blame(
    crossing: list[OpEdge],
    inside: dict[int, list[int]],
    inner: list[tuple[int, int, CutPoint]],
    classify: Classifier,
) -> list[tuple[int, int, CutPoint]]:
    """Turn the edges that enter a box upstream of a cut inside it red.

    The gradient that would have crossed them never arrived because of that cut (the
    ``assign`` of a spec node reads its value inside the node), so the picture shows the cut
    on the link into the box. Returns the inner cuts that no edge could carry.
    """
    entering: dict[int, list[OpEdge]] = defaultdict(list)
    for edge in crossing:
        entering[edge.o].append(edge)
    unshown = []
    for p, o, cut in inner:
        seen, stack, blamed = {p}, [p], False
        while stack:
            op = stack.pop()
            for edge in entering[op]:
                if edge.flow == VALUE and classify.could_carry(edge.t):
                    edge.flow, edge.cut, blamed = CUT, cut, True
            for q in inside[op]:
                if q not in seen:
                    seen.add(q)
                    stack.append(q)
        if not blamed:
            unshown.append((p, o, cut))
    return unshown
