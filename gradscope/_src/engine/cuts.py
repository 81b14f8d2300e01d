"""Cut-point analysis on a plain data-flow graph: where the last paths to a loss were cut, and how.

The graph holds the forward ops of one traced function. Value flows along data edges and along
*assign edges* (a variable write feeds the later reads of the same variable, which TensorFlow
orders with control dependencies). Gradient flows backwards along data edges only, and only
where TensorFlow's own gradient functions pass it. Given the set of tensors that TensorFlow
says do receive a gradient from the loss, a *cut* is an edge ``t -> O`` on a forward path from
a variable to the loss where the gradient reaches ``O`` but does not pass into ``t``.

Every pass below visits each op and edge a bounded number of times, so the analysis is linear
in the size of the graph (a chain of 200 diamonds costs the same per op as a chain of 2).
Sets of variables are Python integers used as bitsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gradscope._src.results.cut import STOP_TYPES, CutPoint

STOPPED = "stopped"
ASSIGN = "assign"
NONDIFFERENTIABLE = "nondifferentiable"
#: Not a cut kind: the value is not differentiable (an integer); the cut is where it was made.
INTEGER = "integer"


@dataclass
class Op:
    """One op: its type, input and output tensor ids, and facts about its gradient."""

    name: str
    type: str
    inputs: list[int]
    outputs: list[int]
    write: bool = False  # writes the resource at inputs[0] (AssignVariableOp, ...)
    no_gradient: bool = False  # TensorFlow gives none of its inputs a gradient
    assign_preds: list[int] = field(default_factory=list)  # writes whose value it reads
    #: state tensors a function it calls writes (the body's ``assign``): it copies into them
    writes: list[int] = field(default_factory=list)
    #: floating inputs its gradient leaves without one (``graph.NONE_INPUTS``)
    none_inputs: list[int] = field(default_factory=list)


@dataclass
class Graph:
    """Ops in creation (topological) order; per tensor: its producer and whether it can carry a
    gradient (floating, complex, resource or variant dtype)."""

    ops: list[Op]
    producer: list[int]
    differentiable: list[bool]

    def value_inputs(self, op: Op) -> Iterable[int]:
        """Inputs that carry value into ``op`` (a write's destination handle does not)."""
        return op.inputs[1:] if op.write else op.inputs


@dataclass(frozen=True)
class Cut:
    """The gradient reaches ``op`` but does not pass into the variables in ``variables``."""

    op: int
    kind: str
    variables: int  # bitset over the analysed variables
    #: ops further on the same path that lose the gradient again (a later cast to an integer
    #: of a value made from the ``argmax`` at ``op``): fixing ``op`` alone leaves them
    later: tuple[int, ...] = ()
    #: the id of the cause the cut stands for where the op's type alone does not say it
    #: (``CAUSE_RULES``; "" otherwise): the cut point carries it (``listed``)
    cause: str = ""


#: Ops that draw random values.
RANDOM_OPS = frozenset({"RandomUniform", "StatelessRandomUniformV2", "StatelessRandomUniform",
                        "RandomStandardNormal", "StatelessRandomNormalV2",
                        "StatelessRandomNormal"})  # fmt: skip
#: Comparisons that draw a 0/1 sample when one side is a uniform draw.
SAMPLING = frozenset({"Less", "LessEqual", "Greater", "GreaterEqual"})


def _bernoulli(graph: Graph, index: int) -> str:
    """A comparison with a random draw (``tf.random.uniform(...) < p``): a Bernoulli sample."""
    op = graph.ops[index]
    drawn = any(graph.ops[graph.producer[t]].type in RANDOM_OPS for t in op.inputs)
    return "sample" if op.type in SAMPLING and drawn else ""


#: Rules that name the cause of a cut from the graph around its op, where the op's type alone
#: does not say it: ``(graph, op index) -> cause id or ""`` (``results/causes.py``'s ids).
CAUSE_RULES: list[Callable[[Graph, int], str]] = [_bernoulli]


def cause_of(graph: Graph, index: int) -> str:
    """The cause the first rule names for a cut at op ``index`` ("" when none does)."""
    return next((found for rule in CAUSE_RULES if (found := rule(graph, index))), "")


def source_bits(ids: Sequence[int | None]) -> dict[int, int]:
    """Tensor id -> the bits of the sources it stands for (source ``i`` is bit ``i``; None:
    not in the graph). A variable asked for twice (``trainable_variables`` may list one
    twice) is one tensor with both bits, so each of its places gets the same cause.
    """
    bits: dict[int, int] = {}
    for i, t in enumerate(ids):
        if t is not None:
            bits[t] = bits.get(t, 0) | 1 << i
    return bits


def variable_sets(graph: Graph, sources: dict[int, int], assign: bool = True) -> list[int]:
    """Per op, the bitset of variables with a forward path to it.

    Args:
        graph: the forward graph.
        sources: tensor id of a variable's handle -> that variable's bit. The handle's
            producer (a placeholder) carries the bit.
        assign: paths may go through a write and a later read of what it wrote (False:
            data edges only).
    """
    out = [0] * len(graph.ops)
    for t, bit in sources.items():
        out[graph.producer[t]] |= bit
    for index, op in enumerate(graph.ops):
        bits = out[index]
        for t in graph.value_inputs(op):
            bits |= out[graph.producer[t]]
        for w in op.assign_preds if assign else ():
            bits |= out[w]
        out[index] = bits
    return out


def reaching(graph: Graph, target_op: int, assign: bool = True) -> list[bool]:
    """Per op, whether it has a forward path (data or assign edges; ``assign`` False: data
    edges only) to ``target_op``."""
    reach = [False] * len(graph.ops)
    reach[target_op] = True
    for index in range(target_op, -1, -1):
        if not reach[index]:
            continue
        op = graph.ops[index]
        for t in graph.value_inputs(op):
            reach[graph.producer[t]] = True
        for w in op.assign_preds if assign else ():
            reach[w] = True
    return reach


def arrivals(graph: Graph, reach: Sequence[bool], grads: set[int]) -> list[bool]:
    """Per op, whether gradient from the loss arrives at one of its outputs.

    A resource write has no outputs; gradient "arrives" at a write when it reaches a later
    read of what it wrote, or (a TensorFlow 1 ``tf.assign``, whose output is the variable)
    its output (and is then lost, since TensorFlow gives assignments no gradient).
    """
    arrive = [False] * len(graph.ops)
    readers: dict[int, list[int]] = {}
    for index, op in enumerate(graph.ops):
        if reach[index]:
            arrive[index] = any(t in grads for t in op.outputs)
            for w in op.assign_preds:
                readers.setdefault(w, []).append(index)
    for index in range(len(graph.ops) - 1, -1, -1):
        if (graph.ops[index].write or graph.ops[index].writes) and reach[index]:
            arrive[index] = arrive[index] or any(arrive[r] for r in readers.get(index, ()))
    return arrive


def crossing(graph: Graph, index: int, t: int, grads: set[int], stop_ops: set[int]) -> str | None:
    """How the gradient that arrives at op ``index`` crosses back into its input tensor ``t``.

    This is the one rule for an edge: None when the gradient passes; ``ASSIGN`` into a write;
    ``INTEGER`` when ``t`` cannot carry a gradient (the cut is upstream, where the value was
    made an integer); ``STOPPED`` at a ``stop_gradient`` (or a tensor the loss treats as a
    constant); ``NONDIFFERENTIABLE`` where TensorFlow gives ``t`` no gradient. Pictures ask
    it for every link (``picture/links.py``), so their red links are the report's cuts.
    """
    op = graph.ops[index]
    if op.write or (op.writes and not any(o in grads for o in op.outputs)):
        return ASSIGN  # a write, or a call whose gradient came back only through what it wrote
    if not graph.differentiable[t]:
        return INTEGER
    if op.type in STOP_TYPES or index in stop_ops:
        return STOPPED
    if t not in grads or op.no_gradient:
        return NONDIFFERENTIABLE
    return None


def find_cuts(
    graph: Graph,
    vsets: Sequence[int],
    reach: Sequence[bool],
    grads: set[int],
    stop_ops: set[int],
    live_out: list[int] | None = None,
    seeds: dict[int, int] | None = None,
) -> list[Cut]:
    """Every cut on a path from an analysed variable to the loss.

    Args:
        graph: the forward graph.
        vsets: per op, the analysed variables that reach it (from ``variable_sets``).
        reach: per op, whether it reaches the loss (from ``reaching``).
        grads: tensor ids that TensorFlow says receive a gradient from the loss.
        stop_ops: ops whose outputs the loss treats as constants (``stop_gradients``).
        live_out: filled, when given, with the ``live`` bits per op (for pictures).
        seeds: op index -> bits that start at that op although it has inputs (a watched
            tensor, ``tape.watch(x)``, is a source wherever it came from).
    """
    arrive = arrivals(graph, reach, grads)
    cuts: dict[tuple[int, str], int] = {}
    later: dict[int, list[int]] = {}
    derived = integer_derived(graph, vsets)
    integer_seen: set[int] = set()
    # Per op, the variables that reach it along paths no cut found so far has taken: a path
    # is named where it was first cut (a StopGradient), never again further on (a comparison
    # inside the loss function after it).
    live = live_out if live_out is not None else []
    live[:] = [0] * len(graph.ops)

    def add(op: int, kind: str, bits: int) -> None:
        if bits:
            cuts[(op, kind)] = cuts.get((op, kind), 0) | bits

    for index, op in enumerate(graph.ops):
        inputs = list(graph.value_inputs(op))
        # A variable's handle (an op with no inputs) starts its bit; a read after writes gets
        # what reached the writes (value passes along assign edges, gradient never does).
        passed = 0 if inputs or op.assign_preds else vsets[index]
        if seeds:
            passed |= seeds.get(index, 0)
        for w in op.assign_preds:
            passed |= live[w]
        cutting = reach[index] and arrive[index]
        for t in inputs:
            if not vsets[graph.producer[t]]:
                continue
            bits = live[graph.producer[t]]
            kind = crossing(graph, index, t, grads, stop_ops) if cutting else None
            if kind is None:
                passed |= bits
            elif kind == INTEGER:
                start = graph.producer[t]
                found, again = _integer_sources(graph, vsets, live, start, integer_seen, derived)
                for p, p_bits in found:
                    add(p, NONDIFFERENTIABLE, p_bits)
                    later.setdefault(p, []).extend(a for a in again if a != p)
            else:
                add(index, kind, bits)
        live[index] = passed
    return [
        Cut(op, kind, bits, tuple(sorted(set(later.get(op, ())))) if kind == NONDIFFERENTIABLE
            else (), cause_of(graph, op))
        for (op, kind), bits in cuts.items()
    ]  # fmt: skip


def integer_derived(graph: Graph, vsets: Sequence[int]) -> list[bool]:
    """Per op, whether every value it reads from an analysed variable is an integer or was
    itself made only from integers (the float ``tf.cast`` of an ``argmax``, and what is
    computed from it): such a value carries no gradient back, so a path through it was lost
    where it first became an integer (contract section 2)."""
    derived = [False] * len(graph.ops)
    for index, op in enumerate(graph.ops):
        ins = [t for t in graph.value_inputs(op) if vsets[graph.producer[t]]]
        derived[index] = bool(ins) and all(
            not graph.differentiable[t] or derived[graph.producer[t]] for t in ins
        )
    return derived


def _integer_sources(
    graph: Graph,
    vsets: Sequence[int],
    live: Sequence[int],
    start: int,
    seen: set[int],
    derived: Sequence[bool],
) -> tuple[list[tuple[int, int]], list[int]]:
    """Ops upstream of a non-differentiable value that made it from a differentiable one
    (the ``argmax``, the ``cast`` to ``int32``): where the user lost the gradient. A floating
    value made only from integers (``tf.cast(tf.argmax(x), tf.float32)``) is followed up to
    the op that first made the integer; the ops on the way that lost it again (a later cast
    to ``int32``) are returned second."""
    found: list[tuple[int, int]] = []
    again: list[int] = []
    stack = [start]
    while stack:
        index = stack.pop()
        if index in seen or not vsets[index]:
            continue
        seen.add(index)
        op = graph.ops[index]
        lost = 0
        for t in graph.value_inputs(op):
            producer = graph.producer[t]
            if not graph.differentiable[t] or _gives_none(graph, producer):
                stack.append(producer)  # an integer, or what an op with no gradient made
            elif derived[producer] and vsets[producer]:
                stack.append(producer)  # a float made only from integers: lost upstream
                if op.outputs and not any(graph.differentiable[o] for o in op.outputs):
                    again.append(index)  # ... and lost again here
            else:
                lost |= live[producer]
        for w in op.assign_preds:
            stack.append(w)
        if lost:
            found.append((index, lost))
    return found, again


def _gives_none(graph: Graph, index: int) -> bool:
    """Whether op ``index`` gives none of its inputs a gradient although it reads floating
    values (``round``, ``floor``): in a chain ``round -> cast``, the gradient was lost there."""
    op = graph.ops[index]
    if op.type in STOP_TYPES:  # a stop_gradient is named where the path reaches it
        return False
    return op.no_gradient and any(graph.differentiable[t] for t in graph.value_inputs(op))


def cut_point(op: Any, kind: str, locate: Callable[[Any], tuple[str, str] | None]) -> CutPoint:
    """How reports and pictures name a cut at the TensorFlow op ``op``: the front-end's
    ``(node, "FILE:LINE")`` for it (``Traceable.locate``), else the op's own name."""
    where = locate(op)
    node, source = where if where is not None else (op.name, "")
    return CutPoint(node=node, op=op.type, kind=kind, source=source)


def with_later(point: CutPoint, later: Sequence[CutPoint]) -> CutPoint:
    """``point`` with the places further on its path that lose the gradient again, each as
    ``"Cast at train.py:8"`` (the fix names them after the first)."""
    places = tuple(dict.fromkeys(f"{p.op} at {p.source or p.node}" for p in later))
    return replace(point, later=places) if places else point


def shown_with_gradient(kind: str, user_wrote: bool) -> bool:
    """Whether a cut is listed for a pair whose gradient still flows (``ok ✂``).

    A path cut inside a library function (the comparison in
    ``sigmoid_cross_entropy_with_logits``, the ``stop_gradient`` in BatchNormalization's
    moments) is noise there; a cut the user wrote, or an ``assign``, is not.
    """
    return kind == ASSIGN or user_wrote


def listed(index: int, located: Sequence[tuple[Any, CutPoint]], cut_all: bool,
           visible: Callable[[Any], bool]) -> list[CutPoint]:  # fmt: skip
    """The cut points source ``index`` lists (contract section 2), each once: every cut of its
    paths when it gets no gradient (or only the zeros TensorFlow fills in), else only the
    cuts :func:`shown_with_gradient` shows. The one rule for a spec's or a Python target's
    pairs and a watched call's sources.

    Args:
        index: the source's bit in each cut's ``variables``.
        located: each cut (a :class:`Cut`, or a ``bodies.InnerCut`` inside a function body)
            with its cut point.
        cut_all: whether every path of the source is cut (no gradient arrives).
        visible: whether the user wrote a cut's ``op`` on their own line.
    """
    out: list[CutPoint] = []
    for cut, point in located:
        said = getattr(cut, "cause", "")
        point = replace(point, cause=said) if said and not point.cause else point
        if not cut.variables >> index & 1 or point in out:
            continue
        if cut_all or shown_with_gradient(cut.kind, visible(cut.op)):
            out.append(point)
    return out
