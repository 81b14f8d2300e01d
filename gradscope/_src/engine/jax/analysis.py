"""Per differentiated leaf: does a path reach the loss, would TensorFlow give a gradient, and
where were the last paths cut (contract section 2), from the jaxpr alone.

The cut analysis is the one TensorFlow's graphs get (``engine/cuts.py``): the same rule for
an edge, the same cut kinds, the same ``argmax``-then-``cast`` walk back to where a float
became an integer. Only the set of tensors that receive a gradient is read off the graph
(``jaxpr.received``) instead of asked of TensorFlow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.jax import compat
from gradscope._src.engine.jax.jaxpr import JaxGraph, build, received
from gradscope._src.results.cut import CutPoint

#: ``(frames of an equation, outermost first) -> (FILE:LINE of the user's line, or "";
#: whether that line names the op, given its type)``: the front-end's reading of a stack.
Locate = Callable[[list[tuple[str, int, str]], str], tuple[str, bool]]


@dataclass
class LeafFacts:
    """One differentiated leaf (a parameter), before its gradient's value is known."""

    index: int  # its position among the jaxpr's input leaves
    reachable: bool = False  # a forward path leads from it to a target
    has_gradient: bool = False  # a gradient reaches it (TensorFlow would not answer None)
    cut_points: list[CutPoint] = field(default_factory=list)
    #: per model output (the jaxpr's other output leaves): whether it reaches it
    outputs: list[bool] = field(default_factory=list)


@dataclass
class Analysed:
    """Every differentiated leaf of one call, and the graph they were read from."""

    leaves: list[LeafFacts]
    graph: JaxGraph
    #: what a picture is drawn from (``engine/picture/scene.py``): per op, the sources that
    #: reach it (bitsets), whether it reaches a target, and the variables no earlier cut
    #: took; the tensors that receive a gradient; the cuts; the target's op
    vsets: list[int] = field(default_factory=list)
    reach: list[bool] = field(default_factory=list)
    live: list[int] = field(default_factory=list)
    received: set[int] = field(default_factory=set)
    cuts: list[flow.Cut] = field(default_factory=list)
    target_op: int = -1
    where: Any = None  # the cut points and lines of ops (``_Where``)


def analyse(closed: Any, sources: Sequence[int], targets: Sequence[int], locate: Locate,
            others: Sequence[int] = ()) -> Analysed:  # fmt: skip
    """Reachability, None-ness and cut points of each source leaf.

    Args:
        closed: ``jax.make_jaxpr(f)(*args)`` of the differentiated function.
        sources: indices of the differentiated input leaves.
        targets: indices of the output leaves differentiated (the loss).
        locate: the user's line of an equation, and whether it names the op.
        others: indices of further output leaves (a model's predictions in ``aux``) whose
            reachability is reported per leaf (an output no loss reads).
    """
    g = build(closed)
    graph = g.graph
    source_ids = [g.inputs[i] for i in sources]
    target_ids = [t for i in targets if (t := g.outputs[i]) is not None]
    bits = flow.source_bits(source_ids)
    vsets = flow.variable_sets(graph, bits)
    reach = [False] * len(graph.ops)
    for t in target_ids:
        for i, r in enumerate(flow.reaching(graph, graph.producer[t])):
            reach[i] = reach[i] or r
    grads = received(graph, target_ids)
    live: list[int] = []
    cuts = flow.find_cuts(graph, vsets, reach, grads, set(), live)
    where = _Where(g, locate)
    located = [
        (c, flow.with_later(where.point(c.op, c.kind), [where.point(i, c.kind) for i in c.later]))
        for c in sorted(cuts, key=lambda c: c.op)
    ]
    reached = 0
    for t in target_ids:
        reached |= vsets[graph.producer[t]]
    other_sets = [vsets[graph.producer[t]] if (t := g.outputs[i]) is not None else 0
                  for i in others]  # fmt: skip
    leaves = []
    for k, (index, t) in enumerate(zip(sources, source_ids, strict=True)):
        leaf = LeafFacts(index, reachable=bool(reached >> k & 1), has_gradient=t in grads)
        leaf.outputs = [bool(s >> k & 1) for s in other_sets]
        for point in flow.listed(k, located, not leaf.has_gradient, where.visible):
            if point not in leaf.cut_points:
                leaf.cut_points.append(point)
        leaves.append(leaf)
    target_op = graph.producer[target_ids[0]] if target_ids else -1
    return Analysed(leaves, g, vsets, reach, live, grads, cuts, target_op, where)


def stack(g: JaxGraph, index: int) -> list[tuple[str, int, str]]:
    """The whole stack op ``index`` of ``g`` was made in, outermost first: those of the
    equations around it, then its own (``JaxGraph.stack_of``)."""
    out: list[tuple[str, int, str]] = []
    for eqn in g.stack_of(index):
        info = getattr(eqn, "source_info", None)
        out += compat.frames_of(info)
        written = compat.written(info)
        if written is not None:  # a Keras operation of a functional model: its line
            return [*out, (written[0], written[1], "<keras operation>")]
    return out


class _Where:
    """Cut points and visibility of the ops of one graph, each equation's stack read once."""

    def __init__(self, g: JaxGraph, locate: Locate) -> None:
        self.g = g
        self.locate = locate
        self.seen: dict[int, tuple[str, bool]] = {}

    def _at(self, index: int) -> tuple[str, bool]:
        if index not in self.seen:
            op = self.g.graph.ops[index]
            frames = stack(self.g, index)
            self.seen[index] = self.locate(frames, op.type) if frames else ("", False)
        return self.seen[index]

    def located(self, index: int) -> tuple[str, str] | None:
        """``(node, "FILE:LINE")`` of op ``index``, as a picture's box names it."""
        source = self._at(index)[0]
        return (self.g.graph.ops[index].name, source) if source else None

    def point(self, index: int, kind: str) -> CutPoint:
        op = self.g.graph.ops[index]
        type_ = op.type if op.type != "Join" else op.name.rsplit("/", 1)[-1]
        return CutPoint(op.name, type_, kind, self._at(index)[0])

    def visible(self, index: Any) -> bool:
        return isinstance(index, int) and self._at(index)[1]
