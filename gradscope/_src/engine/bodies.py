"""Cut points inside function bodies: a nested ``tf.function``, ``while_loop`` and ``cond`` bodies.

A call to a nested ``tf.function`` is one op in the trace (``StatefulPartitionedCall``), and a
``tf.while_loop`` or ``tf.cond`` one ``While`` or ``If`` op whose bodies are functions of their
own. TensorFlow differentiates through them, so the cut analysis of the outer graph sees the
call op as the place a path was cut (a ``stop_gradient`` inside the function) or sees no cut at
all (a loop hands back zeros for a loop variable whose every path was stopped inside it).
``descend`` analyses each body on a path with the same rule as the outer graph
(``cuts.find_cuts``), so the op inside is named at its own line. Which tensors of a body get a
gradient is derived from TensorFlow's gradient registry (a body's gradient graph is not built
until the outer one is, and is not a graph we can ask); a predicate never carries gradient, so
it is never a cut point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import CALL_TYPES, Extracted, GradientRegistry, copying_writes
from gradscope._src.results.cut import STOP_TYPES

#: Op type -> (attributes naming its bodies, index of the first input a body receives).
_BODIES = {
    "PartitionedCall": (("f",), 0),
    "StatefulPartitionedCall": (("f",), 0),
    "While": (("body",), 0),
    "StatelessWhile": (("body",), 0),
    "If": (("then_branch", "else_branch"), 1),
    "StatelessIf": (("then_branch", "else_branch"), 1),
    "Case": (("branches",), 1),
    "StatelessCase": (("branches",), 1),
}
_LOOPS = frozenset({"While", "StatelessWhile"})
#: Functions inside functions inside ...: deeper bodies are left to the call op's cut.
_MAX_DEPTH = 6


@dataclass(frozen=True)
class InnerCut:
    """A cut inside a body: the TensorFlow ``op`` cut the paths of ``variables`` (a bitset)."""

    op: Any
    kind: str
    variables: int
    later: tuple[Any, ...] = ()  # TensorFlow ops that lose the same path again (``Cut.later``)


def has_bodies(op: Any) -> bool:
    """Whether ``op`` runs function bodies the analysis can descend into."""
    return op.type in _BODIES


def bodies(op: Any) -> list[Any]:
    """The ``FuncGraph`` of every body ``op`` runs (those TensorFlow still holds)."""
    attrs, _ = _BODIES.get(op.type, ((), 0))
    out = []
    for attr in attrs:
        try:
            value = op.node_def.attr[attr]
        except (KeyError, ValueError):
            continue
        names = [value.func.name] if value.HasField("func") else [f.name for f in value.list.func]
        for name in names:
            function = op.graph._get_function(name)  # NOTE: no public lookup by name
            graph = getattr(function, "graph", None)
            if graph is not None:
                out.append(graph)
    return out


def static_received(graph: flow.Graph, targets: set[int]) -> set[int]:
    """Tensors that get gradient back from ``targets``, by the registry's rules: through every
    op but a write, a ``stop_gradient`` and an op with no gradient; into floating values but
    those an op's gradient leaves without one (``graph.NONE_INPUTS``)."""
    received = set(targets)
    for index in range(len(graph.ops) - 1, -1, -1):
        op = graph.ops[index]
        if not any(t in received for t in op.outputs):
            continue
        if op.write or op.type in STOP_TYPES or op.no_gradient:
            continue
        received.update(t for t in graph.value_inputs(op)
                        if graph.differentiable[t] and t not in op.none_inputs)  # fmt: skip
    return received


class Descent:
    """Finds cuts inside the bodies of the ops of one graph, recursively."""

    def __init__(self, registry: GradientRegistry | None = None) -> None:
        self.registry = registry or GradientRegistry()
        self._extracted: dict[int, Extracted] = {}

    def descend(
        self,
        x: Extracted,
        live: Sequence[int],
        received: set[int],
        reach: Sequence[bool],
        depth: int = 0,
    ) -> dict[int, list[InnerCut]]:
        """Per op of ``x`` with bodies on a path, the cuts inside them.

        Args:
            x: the graph.
            live: per op, the variables whose paths no earlier cut took (``find_cuts``).
            received: tensor ids of ``x`` that get a gradient from the loss.
            reach: per op, whether it reaches the loss.
            depth: how deep inside bodies ``x`` itself is.
        """
        out: dict[int, list[InnerCut]] = {}
        if depth >= _MAX_DEPTH:
            return out
        for index, node in enumerate(x.graph.ops):
            op = x.tf_ops[index]
            if not (reach[index] and has_bodies(op)):
                continue
            in_bits = [live[x.graph.producer[t]] if t is not None else 0 for t in _ids(x, op)]
            wanted = [t in received for t in node.outputs]
            if not any(in_bits) or not any(wanted):
                continue
            found = [c for body in bodies(op) for c in self.body(op, body, in_bits, wanted, depth)]
            if found:
                out[index] = found
        return out

    def body(
        self, op: Any, body: Any, in_bits: list[int], wanted: list[bool], depth: int
    ) -> list[InnerCut]:
        """Cuts inside one body of ``op``; input ``k`` of the body carries ``in_bits[offset+k]``
        and gradient comes back through the body outputs whose ``wanted`` is true."""
        _, offset = _BODIES[op.type]
        return self.inside(body, in_bits[offset:], wanted, depth, op.type in _LOOPS)

    def inside(self, body: Any, in_bits: list[int], wanted: list[bool], depth: int = 0,
               loop: bool = False) -> list[InnerCut]:  # fmt: skip
        """Cuts inside ``body`` (a ``FuncGraph``) whose input ``k`` carries ``in_bits[k]`` and
        whose outputs ``wanted`` send gradient back: a function's body, or one a program
        called eagerly (``tf.function``), rebuilt from its definition."""
        x = self._extract(body)
        graph = x.graph
        ins = [x.tensor_id(t) for t in body.inputs]
        outs = [x.tensor_id(t) for t in body.outputs]
        bits = [in_bits[k] if k < len(in_bits) else 0 for k in range(len(ins))]
        wanted = [wanted[j] if j < len(wanted) else False for j in range(len(outs))]
        for _ in range(len(ins) + 1):  # a loop carries value and gradient round to itself
            sources = {t: b for t, b in zip(ins, bits, strict=True) if t is not None and b}
            vsets = flow.variable_sets(graph, sources)
            targets = {t for t, w in zip(outs, wanted, strict=True) if w and t is not None}
            received = static_received(graph, targets)
            if not loop:
                break
            changed = False
            for j, t in enumerate(outs[: len(ins)]):
                carried = vsets[graph.producer[t]] if t is not None else 0
                if carried & ~bits[j]:
                    bits[j] |= carried
                    changed = True
                if not wanted[j] and ins[j] in received:
                    wanted[j] = changed = True
            if not changed:
                break
        reach = _reaching(graph, [graph.producer[t] for t in targets])
        live: list[int] = []
        cuts = flow.find_cuts(graph, vsets, reach, received, set(), live_out=live)
        found = [InnerCut(x.tf_ops[c.op], c.kind, c.variables) for c in cuts]
        for inner in self.descend(x, live, received, reach, depth + 1).values():
            found += inner
        return found

    def _extract(self, body: Any) -> Extracted:
        key = id(body)
        if key not in self._extracted:
            self._extracted[key] = Extracted(body.get_operations(), self.registry)
        return self._extracted[key]


def _ids(x: Extracted, op: Any) -> list[int | None]:
    return [x.tensor_id(t) for t in op.inputs]


def _reaching(graph: flow.Graph, targets: list[int]) -> list[bool]:
    reach = [False] * len(graph.ops)
    for target in targets:
        for index, yes in enumerate(flow.reaching(graph, target)):
            reach[index] = reach[index] or yes
    return reach


def copying_ops(op: Any) -> list[Any]:
    """The writes inside the body a call op runs that copy its inputs' values into a variable
    (``graph.copying_writes``): where a path the call cuts as an assignment was cut."""
    if op.type not in CALL_TYPES:
        return []
    try:
        function = op.graph._get_function(op.get_attr("f").name)  # NOTE: no public lookup
        body = function.graph
        return [body.get_operation_by_name(n) for n in copying_writes(function.definition)]
    except (AttributeError, KeyError, ValueError):
        return []


def located(x: Extracted, cuts: list[flow.Cut], inner: dict[int, list[InnerCut]]) -> list[InnerCut]:
    """Every cut as the TensorFlow op that made it, in graph order. A cut at an op with bodies
    (a nested ``tf.function``'s call) is replaced by the cuts found inside, for the variables
    those explain (an assignment cut at a call, by the ``assign`` inside it); cuts inside a
    body the outer graph saw no cut at are added."""
    out: list[InnerCut] = []
    for cut in sorted(cuts, key=lambda c: c.op):
        explained = 0
        for found in inner.get(cut.op, ()):
            explained |= found.variables & cut.variables
        if cut.kind == flow.ASSIGN and x.graph.ops[cut.op].writes:
            writes = copying_ops(x.tf_ops[cut.op])
            out += [InnerCut(w, cut.kind, cut.variables & ~explained) for w in writes]
            explained |= cut.variables if writes else 0
        if cut.variables & ~explained:
            later = tuple(x.tf_ops[i] for i in cut.later)
            out.append(InnerCut(x.tf_ops[cut.op], cut.kind, cut.variables & ~explained, later))
    for index in sorted(inner):
        out += inner[index]
    return out
