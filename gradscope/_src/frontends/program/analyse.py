"""Per watched call: each source's reachability and cut points, from the existing cut analysis.

The caller turns what the program ran into a ``flow.Graph`` (a traced graph, a TensorFlow 1
graph, or the ops an eager tape saw) and says which tensors received a gradient; the cuts
themselves are decided by ``engine/cuts.py`` as for specs and Python targets.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.engine import status as statuses
from gradscope._src.location import Location
from gradscope._src.results import causes, words
from gradscope._src.results.causes import Cause
from gradscope._src.results.cut import STOP_TYPES
from gradscope._src.results.facts import CutPoint, NanOrigin, PairFacts, VariableFacts
from gradscope._src.results.status import Status


@dataclass
class SourceStatic:
    """One source of a call once its graph is known, before any value is fetched."""

    name: str
    shape: tuple[int | None, ...]
    has_gradient: bool
    sparse: bool = False
    reachable: bool = False
    cut_points: list[CutPoint] = field(default_factory=list)
    cause: Cause | None = None  # why, where the cut points cannot say
    trainable: bool = True
    half_path: bool = False  # a float16 value lies on a path to the target (underflow)
    requested: bool | None = None  # None: asked for when trainable or given a gradient
    trainable_changed: bool = False  # a changed trainable flag the traced Keras step ignores
    nan_origin: NanOrigin | None = None  # a non-finite gradient: where it first appeared
    branch: str = ""  # FILE:LINE of the tf.cond (or switch_case, py_function) every path crosses
    branch_op: str = ""  # its op type (If, Case, EagerPyFunc, ...)
    #: (FILE:LINE, op type) of an op whose gradient TensorFlow defines as 0 everywhere
    #: (``tf.sign``) that every path crosses: the gradient is 0 at every step
    zero_op: tuple[str, str] = ("", "")
    attribute: str = ""  # the attribute the user's code reaches it by (``box_head.kernel``)
    copy_of: tuple[str, str] = ("", "")  # (variable, FILE:LINE) the program copied into it


@dataclass(frozen=True)
class Recorded:
    """Why one source gets no gradient, as a timeline records it (``gradscope run --timeline``
    and the Keras ``Monitor`` alike).

    Attributes:
        status: a ``none:*`` status (contract section 2).
        why: ``cut at`` the cut points (``node (Op) at FILE:LINE``), or why there is no
            path (empty when the analysis has no more to say than the status).
        cut_points: the cut points as the timeline holds them (``node``, ``op``, ``kind``,
            ``source``), none when there is no path to cut.
    """

    status: str
    why: str
    cut_points: tuple[dict[str, str], ...] = ()
    cause: Cause | None = None  # the cause itself, which a timeline keeps (``why``) for its fix


def recorded(status: str, cut_points: Sequence[CutPoint], cause: Cause | None) -> Recorded:
    """A source's :class:`Recorded` from its status, cut points and cause."""
    points = tuple({"node": c.node, "op": c.op, "kind": c.kind, "source": c.source}
                   for c in cut_points)  # fmt: skip
    return Recorded(str(status), words.cause(cut_points, str(cause or "")), points, cause)


#: ``(cuts, live, received, reach) -> [(cut, its cut point)]``: a call's cuts as the ops that
#: made them, inside the bodies of the ``tf.function``s it calls (``analyse``'s ``inside``).
Inside = Callable[[list[flow.Cut], list[int], set[int], list[bool]], list[tuple[Any, CutPoint]]]


@dataclass(frozen=True)
class Problem:
    """What the cut analysis needs to know about one call."""

    graph: flow.Graph
    sources: Sequence[int | None]  # tensor id of each source in ``graph`` (None: not in it)
    targets: Sequence[int]  # tensor ids of the targets (the losses) in ``graph``
    received: set[int] = field(default_factory=set)  # tensors that receive a gradient
    stop_ops: set[int] = field(default_factory=set)
    half: Sequence[bool] = ()  # per tensor: float16 (or bfloat16)


def analyse(
    problem: Problem,
    statics: Sequence[SourceStatic],
    locate: Callable[[int, str], CutPoint],
    visible: Callable[[Any], bool],
    inside: Inside | None = None,
) -> None:
    """Fill each source's ``reachable`` and ``cut_points``.

    Args:
        problem: the graph and what received a gradient.
        statics: the sources, in the order of ``problem.sources``; updated in place.
        locate: the cut point of op ``index`` cut in ``kind``.
        visible: whether the user wrote op ``index`` (or an op ``inside`` names) on their own
            line (cuts of a gradient that still flows are listed only then, as for Python
            targets).
        inside: the cuts with those at a ``tf.function``'s call replaced by the ops inside
            its body that made them (``bodies.located``), each with its cut point; None: the
            cuts as found.
    """
    graph = problem.graph
    if not problem.targets:
        return
    sources = flow.source_bits(problem.sources)
    vsets = flow.variable_sets(graph, sources)
    reach = reaching(problem)
    reached = 0
    for t in problem.targets:
        reached |= vsets[graph.producer[t]]
    seeds: dict[int, int] = {}
    for t, bit in sources.items():
        op = graph.producer[t]
        seeds[op] = seeds.get(op, 0) | bit
    received = set(problem.received) | set(problem.targets)
    received |= {t for t, s in zip(problem.sources, statics, strict=True)
                 if t is not None and s.has_gradient}  # fmt: skip
    _unrecorded(graph, vsets, received, problem.stop_ops)
    live: list[int] = []
    cuts = flow.find_cuts(graph, vsets, reach, received, problem.stop_ops, live, seeds=seeds)
    located: Sequence[tuple[Any, CutPoint]] = [
        (c, flow.with_later(locate(c.op, c.kind), [locate(i, c.kind) for i in c.later]))
        for c in sorted(cuts, key=lambda c: c.op)
    ]
    if inside is not None:
        located = inside(cuts, live, received, reach)
    halves = 0
    for t, is_half in enumerate(problem.half):
        if is_half and reach[graph.producer[t]]:
            halves |= vsets[graph.producer[t]]
    for i, static in enumerate(statics):
        if problem.sources[i] is None:
            continue
        static.reachable = bool(reached >> i & 1)
        static.half_path = bool(halves >> i & 1)
        for point in flow.listed(i, located, not static.has_gradient, visible):
            if point not in static.cut_points:
                static.cut_points.append(point)


def _unrecorded(
    graph: flow.Graph, vsets: Sequence[int], received: set[int], stop_ops: set[int]
) -> None:
    """Count as receiving a gradient the values a tape cannot have recorded for the sources:
    those made only from integer values, stopped ones, or values a write carried.

    A tape records no op whose inputs it does not watch, so nothing made from an integer
    tensor (the float cast of a ``tf.cast(x, tf.int32)``), from a ``stop_gradient``, or from
    the read of a variable it does not watch (a non-trainable ``buf`` after
    ``buf.assign(x * w)``) gets a gradient from it, where ``tf.gradients`` would pass one back
    to them. With them counted, the cut is where the value became an integer, was stopped or
    was assigned (the contract's cut point), not where the tape stopped recording (the
    ``MatMul`` that reads ``x + buf``). The gradient goes back only through ops whose
    gradient passes it, and only into the inputs it passes it to (as
    ``bodies.static_received``), so a ``stop_gradient``, an op with no gradient or an input
    its op gives none (a batch norm's ``mean``, ``graph.NONE_INPUTS``) downstream stays the
    cut.
    """
    derived = [False] * len(graph.ops)
    for i, op in enumerate(graph.ops):
        ins = [t for t in graph.value_inputs(op) if vsets[graph.producer[t]]]
        written = any(vsets[w] for w in op.assign_preds)  # value a write carried: never taped
        if op.type in STOP_TYPES or i in stop_ops:
            derived[i] = bool(ins) or written
            continue
        derived[i] = (bool(ins) or written) and all(
            not graph.differentiable[t] or derived[graph.producer[t]] for t in ins
        )
    for i in range(len(graph.ops) - 1, -1, -1):
        op = graph.ops[i]
        if not any(t in received for t in op.outputs):
            continue
        if op.write or op.type in STOP_TYPES or i in stop_ops or op.no_gradient:
            continue  # no gradient goes back through it: it stays the cut
        for t in graph.value_inputs(op):
            if graph.differentiable[t] and derived[graph.producer[t]] and t not in op.none_inputs:
                received.add(t)


def probes(problem: Problem) -> list[int]:
    """Tensors worth asking for a gradient: on a path from a source to the target, able to
    carry a gradient, and not a source themselves."""
    graph = problem.graph
    if not problem.targets:
        return []
    sources = {t: 1 for t in problem.sources if t is not None}
    vsets = flow.variable_sets(graph, sources)
    reach = reaching(problem)
    return [
        t
        for t, p in enumerate(graph.producer)
        if reach[p] and vsets[p] and graph.differentiable[t] and t not in sources
    ]


def reaching(problem: Problem, assign: bool = True) -> list[bool]:
    """Per op, whether it has a forward path to one of the targets (``assign`` False: along
    data edges only, not through a write and a later read of what it wrote)."""
    graph = problem.graph
    out = [False] * len(graph.ops)
    for t in problem.targets:
        for i, r in enumerate(flow.reaching(graph, graph.producer[t], assign)):
            out[i] = out[i] or r
    return out


def status(static: SourceStatic, norm: float | None, largest: float | None,
           measured: bool = True) -> Status:  # fmt: skip
    """The contract status of a source, decided where every status is (``engine/status.py``).

    Args:
        static: the source.
        norm: its gradient's L2 norm in this execution (None: not known).
        largest: its gradient's largest absolute element (None: not known).
        measured: False when the call never ran: a gradient is then ``unknown``.
    """
    finite, zero = True, False
    if norm is not None and largest is not None:
        finite, zero = statuses.measured(norm, largest)
    requested = static.requested
    if requested is None:
        requested = static.trainable or static.has_gradient
    pair = PairFacts(
        variable=static.name,
        requested=requested,
        has_gradient=static.has_gradient,
        reachable=static.reachable,
        sparse=static.sparse,
        norm=norm,
        finite=finite,
        all_zero=zero,
        cut_points=tuple(static.cut_points),
        measured=measured,
    )
    variable = VariableFacts(static.name, static.shape, "", static.trainable, "")
    return statuses.status_of(pair, variable)


def unwatched(statics: Sequence[SourceStatic], watched: Sequence[bool | None],
              trainable: Sequence[bool], accessed: bool,
              tensors: Sequence[bool | None] | None = None) -> None:  # fmt: skip
    """The cause of a variable the tape never watched: its gradient is None whatever its
    paths, so no op on them is a cut. Not trainable, it is ``frozen`` (a tape watches only
    trainable variables; ``inspect`` says the same); trainable under
    ``watch_accessed_variables=False`` (``accessed`` False), it is disconnected from the tape.
    A trainable variable the tape did not see read keeps the cause of its paths (read while
    the tape was not recording: ``outside_notes``).

    Args:
        statics: the sources; updated in place.
        watched: per source, whether the tape watches it (None: a tensor).
        trainable: per source, the variable's ``trainable`` flag.
        accessed: whether the tape watches the trainable variables it sees read.
        tensors: per source, whether a tape watched it, for a tensor (``unwatched_tensors``).
    """
    if tensors:
        unwatched_tensors(statics, tensors)
    for static, seen, can in zip(statics, watched, trainable, strict=True):
        if seen is not False or static.has_gradient or (can and accessed):
            continue
        static.reachable = False
        static.cut_points.clear()
        if not can:
            static.trainable = static.requested = False
            static.cause = causes.NotTrainable()
        else:
            static.cause = causes.UnwatchedVariable()


def unwatched_tensors(statics: Sequence[SourceStatic], watched: Sequence[bool | None]) -> None:
    """The cause of a tensor source no tape watched: a tape records ops on a tensor only after
    ``tape.watch()`` of it, so no op on its paths is a cut.

    Args:
        statics: the sources; updated in place.
        watched: per source, whether a tape watched it (None: a variable, or not known).
    """
    for static, seen in zip(statics, watched, strict=True):
        if seen is not False or static.has_gradient:
            continue
        static.reachable = False
        static.cut_points.clear()
        static.cause = causes.UnwatchedTensor()


def through_numpy_function(statics: Sequence[SourceStatic], targets: Sequence[Any],
                           where: Callable[[Any], str]) -> None:  # fmt: skip
    """Sources with no path to a target that reads the output of ``tf.numpy_function`` (or
    ``tf.py_function``), where nothing else explains them: the values the loss is made from
    were computed in Python, outside the graph, where a model called inside that function
    reads its variables unseen (its cause, ``numpy-function``, at the call's line: ``where``
    of the op, the user's ``FILE:LINE``). Graph-built targets only (an eager call runs the
    function directly, with no op)."""
    idle = [s for s in statics if not s.has_gradient and not s.reachable and s.cause is None]
    if not idle:
        return
    seen: set[int] = set()
    todo = [t.op for t in targets if hasattr(t, "op") and hasattr(t.op, "inputs")]
    found = []
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type in causes.PY_FUNC_TYPES:
            found.append(op)
        todo.extend(t.op for t in op.inputs)
    if not found:
        return
    op = max(found, key=lambda o: getattr(o, "_id", 0))  # the one nearest the loss
    cause = causes.NumpyFunction(line=where(op), op=op.type, node=op.name, feeds=True)
    for s in idle:
        s.cause = cause


def filled(statics: Sequence[SourceStatic], received: Sequence[object]) -> None:
    """Sources TensorFlow gave zeros for want of a gradient (``unconnected_gradients=ZERO``):
    the program received a gradient, all zero (status ``zero``); the note says TensorFlow
    filled it, after the cause of the missing path when one is known.

    Args:
        statics: the sources, analysed; updated in place.
        received: per source, what the program received (None: no gradient).
    """
    for static, grad in zip(statics, received, strict=True):
        if grad is not None and not static.has_gradient:
            static.has_gradient = True
            static.cause = causes.Filled(also=(static.cause,) if static.cause else ())


def outside_notes(
    full: Problem,
    statics: Sequence[SourceStatic],
    recorded: Callable[[int], bool],
    where: Callable[[int], str],
) -> None:
    """Name the line of a path the tape never saw: a source that reaches the target in the
    whole program but not in what the tape recorded (computed before the tape started, or
    under ``stop_recording``) gets a note at the last such op.

    Args:
        full: every op of the program, the tape's and the others.
        statics: the sources, in the order of ``full.sources``; notes are set in place.
        recorded: whether op ``index`` of ``full.graph`` was recorded by the tape.
        where: the user's ``FILE:LINE`` of op ``index``.
    """
    graph = full.graph
    if not full.targets:
        return
    sources = flow.source_bits(full.sources)
    # a path along data edges first: the value itself, made before the tape (a GAN's images
    # made outside the generator's tape), not an optimizer's write its later reads see
    data = flow.variable_sets(graph, sources, assign=False), reaching(full, assign=False)
    whole = flow.variable_sets(graph, sources), reaching(full)
    for i, static in enumerate(statics):
        if static.reachable or static.has_gradient or static.cause or full.sources[i] is None:
            continue
        outside = []
        for vsets, reach in (data, whole):
            outside = [k for k, bits in enumerate(vsets) if bits >> i & 1 and reach[k]
                       and not recorded(k) and graph.ops[k].inputs]  # fmt: skip
            if outside:
                break
        if outside:
            last = outside[-1]
            made = set(graph.ops[last].outputs)
            read = next((j for j in range(last + 1, len(graph.ops)) if recorded(j)
                         and made.intersection(graph.value_inputs(graph.ops[j]))),
                        None)  # fmt: skip
            static.cause = causes.OutsideTape(
                line=where(last), op=graph.ops[last].type,
                read_at=where(read) if read is not None else "")  # fmt: skip


def numpy_calls(site: str) -> tuple[str, ...]:
    """The NumPy functions the user's line ``site`` (``FILE:LINE``) calls, each once, in
    order (``("clip",)`` for ``v = np.clip(h.numpy(), 0, 1)``): what a round trip's fix
    replaces with TensorFlow ops. None when the line cannot be read or parsed alone."""
    import ast
    import linecache

    place = Location.parse(site)
    if place is None or place.line < 1:
        return ()
    text = linecache.getline(place.file, place.line).strip()
    try:
        tree = ast.parse(text.removesuffix(":") + (" pass" if text.endswith(":") else ""))
    except SyntaxError:  # a line of a longer statement
        return ()
    found = [
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("np", "numpy")
    ]
    return tuple(dict.fromkeys(sorted(found, key=lambda name: text.find(f".{name}("))))


def roundtrip_notes(full: Problem, statics: Sequence[SourceStatic],
                    left: dict[int, tuple[str, str]]) -> None:  # fmt: skip
    """Name the line where a source's value left TensorFlow (``.numpy()``, ``float()``,
    ``np.asarray()``, ``model.predict()``): a source that reaches such a tensor but not the
    target lost its path there, since what comes back from numpy is a new constant. The exit
    is the source's cut point (no gradient goes through numpy), its op the one whose value
    left.

    Args:
        full: every recorded op.
        statics: the sources, in the order of ``full.sources``; updated in place.
        left: tensor id in ``full.graph`` -> the line that took its value out of TensorFlow
            and how.
    """
    graph = full.graph
    sources = flow.source_bits(full.sources)
    vsets = flow.variable_sets(graph, sources)
    for i, static in enumerate(statics):
        if static.reachable or static.has_gradient or static.cause:
            continue
        exits = [(t, line, how) for t, (line, how) in left.items()
                 if vsets[graph.producer[t]] >> i & 1]  # fmt: skip
        if not exits:
            continue
        t, line, how = exits[-1]
        static.cause = causes.LeftTensorFlow(line=line, how=how, names=numpy_calls(line))
        op = graph.ops[graph.producer[t]].type
        op = "PartitionedCall" if op.startswith("__") else op  # a tf.function called eagerly
        static.cut_points.append(CutPoint(how, op, flow.NONDIFFERENTIABLE, line))


def dead_end_notes(
    full: Problem,
    statics: Sequence[SourceStatic],
    recorded: Callable[[int], bool],
    where: Callable[[int], str],
    came_back: Callable[[int], str | None] = lambda k: None,
    left_only: bool = False,
    used: Callable[[int], bool] = lambda t: False,
    unread: Cause | None = None,
    site: str = "",
) -> None:
    """Name the line where a disconnected source's last path ends: a value made from it that
    no op reads (a ``TensorArray.write`` whose result is dropped, a layer whose output
    ``call()`` does not return, a value handed to numpy without ``.numpy()``).

    When the target reads a constant holding that very value, made after it
    (``came_back``), the value left TensorFlow there (``np.asarray(t)``, ``np.array(t)``
    read a tensor through the buffer protocol, which no Python method sees) and came back as
    that constant: the end is the source's cut point, as an exit seen by
    ``roundtrip_notes`` is.

    Args:
        full: every op of the program, the tape's and the others.
        statics: the sources, in the order of ``full.sources``; updated in place.
        recorded: whether op ``index`` of ``full.graph`` ran while the tape recorded.
        where: the user's ``FILE:LINE`` of op ``index``.
        came_back: the line of a constant on the target's paths that holds op ``index``'s
            value, made after it (None: none).
        left_only: name only values that left TensorFlow (a cause that comes before the
            others'); the rest are left to a later call.
        used: whether the program used tensor ``t`` outside TensorFlow's ops (printed it,
            asked a gradient of it): no value thrown away.
        unread: the cause of a source no recorded op reads at all (None: none).
        site: the call's own ``FILE:LINE``: a path that ends there (inside Keras' ``fit``)
            adds nothing to a cause already said without a line.
    """
    graph = full.graph
    if not full.targets:
        return
    sources = flow.source_bits(full.sources)
    vsets = flow.variable_sets(graph, sources)
    read = {t for op in graph.ops for t in op.inputs}
    ends = [k for k, op in enumerate(graph.ops)
            if op.inputs and not op.write and recorded(k) and not op.no_gradient
            and any(graph.differentiable[t] for t in op.outputs)
            and not any(t in read or used(t) for t in op.outputs)]  # fmt: skip
    for i, static in enumerate(statics):
        if static.reachable or static.has_gradient or full.sources[i] is None:
            continue
        said = static.cause
        if said and (left_only or static.cut_points or said.line or _lined(said)):
            continue
        mine = [k for k in ends if vsets[k] >> i & 1]
        if not mine:
            read_it = any(vsets[k] >> i & 1 and recorded(k) and op.inputs
                          for k, op in enumerate(graph.ops))  # fmt: skip
            if unread and not left_only and not said and not read_it:
                static.cause = unread
            continue
        k = mine[-1]
        line, op = where(k), graph.ops[k].type
        back = came_back(k)
        if back is not None and not said:
            static.cause = causes.LeftTensorFlow(
                line=line, op=op, back=back, names=numpy_calls(line) or numpy_calls(back)
            )
            static.cut_points.append(CutPoint("numpy", op, flow.NONDIFFERENTIABLE, line))
        elif left_only:
            continue
        elif said and line == site:
            continue  # the call's own line (Keras' step): the cause says it all
        elif said:  # a cause without a line (a layer off its model's path): the line
            static.cause = said.then(causes.PathEnds(line=line, op=op))
        else:
            static.cause = causes.PathEnds(line=line, op=op)


def _lined(cause: Cause) -> bool:
    """Whether a cause names a line of its own (the loss's, an output's model's)."""
    return bool(cause.line) or any(_lined(a) for a in cause.also)


#: The ops of ``tf.cond`` and ``tf.switch_case`` in a traced function, and of
#: ``tf.py_function`` (whose gradient is what the function's own TensorFlow ops give).
BRANCH_TYPES = frozenset({"If", "StatelessIf", "Case", "StatelessCase", "EagerPyFunc"})


def through_branches(problem: Problem, statics: Sequence[SourceStatic],
                     where: Callable[[int], str]) -> None:  # fmt: skip
    """Note the ``tf.cond`` (``If``), ``tf.switch_case`` or ``tf.py_function`` every path of a
    source crosses: should its gradient be all zero, the branch that reads it was most likely
    not taken (TensorFlow gives the inputs of an untaken branch zeros, not None), or the
    function took the value out of TensorFlow (its gradient is then zero, not None).

    Args:
        problem: the call's graph and targets.
        statics: the sources, analysed (``reachable`` known); ``branch`` set in place.
        where: the user's ``FILE:LINE`` of op ``index``.
    """
    graph = problem.graph
    branches = {k for k, op in enumerate(graph.ops) if op.type in BRANCH_TYPES}
    if not branches or not problem.targets:
        return
    sources = flow.source_bits(problem.sources)
    cut = [dataclasses.replace(op, inputs=[], assign_preds=[]) if k in branches else op
           for k, op in enumerate(graph.ops)]  # fmt: skip
    without = flow.variable_sets(flow.Graph(cut, graph.producer, graph.differentiable), sources)
    vsets = flow.variable_sets(graph, sources)
    reached = 0
    for t in problem.targets:
        reached |= without[graph.producer[t]]
    reach = reaching(problem)
    for i, static in enumerate(statics):
        if not static.reachable or reached >> i & 1 or problem.sources[i] is None:
            continue
        crossed = [k for k in sorted(branches) if vsets[k] >> i & 1 and reach[k]]
        if crossed:
            static.branch = where(crossed[-1]) or "an unknown line"
            static.branch_op = graph.ops[crossed[-1]].type


#: Ops whose gradient TensorFlow registers as zero everywhere (not None): a path through one
#: carries a gradient of 0 at every step.
ZERO_DERIVATIVE_TYPES = frozenset({"Sign", "ZerosLike", "OnesLike"})


def through_zero_derivative(problem: Problem, statics: Sequence[SourceStatic],
                            where: Callable[[int], str]) -> None:  # fmt: skip
    """Note the op every path of a source crosses whose gradient TensorFlow defines as zero
    everywhere (``tf.sign``: its gradient is ``zeros_like``): the gradient that comes back is
    all zero at every step, so the variable never trains (a binarized network without its
    straight-through estimator).

    Args:
        problem: the call's graph and targets.
        statics: the sources, analysed (``reachable`` known); ``zero_op`` set in place.
        where: the user's ``FILE:LINE`` of op ``index``.
    """
    graph = problem.graph
    zeros = {k for k, op in enumerate(graph.ops) if op.type in ZERO_DERIVATIVE_TYPES}
    if not zeros or not problem.targets:
        return
    sources = flow.source_bits(problem.sources)
    cut = [dataclasses.replace(op, inputs=[], assign_preds=[]) if k in zeros else op
           for k, op in enumerate(graph.ops)]  # fmt: skip
    without = flow.variable_sets(flow.Graph(cut, graph.producer, graph.differentiable), sources)
    vsets = flow.variable_sets(graph, sources)
    reached = 0
    for t in problem.targets:
        reached |= without[graph.producer[t]]
    reach = reaching(problem)
    for i, static in enumerate(statics):
        if not static.reachable or reached >> i & 1 or problem.sources[i] is None:
            continue
        crossed = [k for k in sorted(zeros) if vsets[k] >> i & 1 and reach[k]]
        if crossed:  # the first on its way: where its own value loses the gradient
            static.zero_op = (where(crossed[0]), graph.ops[crossed[0]].type)


def zero_cause(static: SourceStatic) -> Cause | None:
    """Why a source's gradient that is all zero may be (None: nothing known): every path
    crosses an op whose gradient is zero everywhere (``through_zero_derivative``), a float16
    value on its paths underflowed, or every path crosses a ``tf.cond`` (or
    ``tf.py_function``) whose branch that reads it was not taken (``through_branches``)."""
    if static.zero_op[1]:
        return causes.ZeroDerivative(line=static.zero_op[0], op=static.zero_op[1])
    if static.half_path:
        return causes.Underflow()
    if static.branch:
        return causes.BranchZero(line=static.branch, op=static.branch_op)
    return None


def no_var_list(statics: Sequence[SourceStatic], api: str) -> None:
    """The cause of the variables a ``compute_gradients``/``minimize`` given no ``var_list``
    differentiates though the loss never reads them: TensorFlow 1 then takes every trainable
    variable of the graph (tensorflow/tensorflow#1511 and the seed question), and returns
    None for each the loss does not reach.

    Args:
        statics: the sources (every trainable variable), analysed; notes set in place.
        api: ``compute_gradients`` or ``minimize``.
    """
    reached = [s.name for s in statics if s.reachable or s.has_gradient]
    if len(reached) == len(statics):
        return
    for static in statics:
        if static.reachable or static.has_gradient or static.cause:
            continue
        static.cause = causes.NoVarList(api=api, names=tuple(reached))
