"""A gradient call on a graph, analysed in a copy of it: a graph-level call the program made
(``tf.gradients``, ``compute_gradients``; numbers from its own executions), and a traced
Keras train step whose optimizer got a None gradient (the Keras ``Monitor``'s causes).

Both ask :func:`in_copy` which tensors receive a gradient, and the cut analysis
(``analyse.py``) and the Keras causes (``fit.py``) decide each source's cause and cut points,
as for every other watched call; ``analyse.recorded`` words it for a timeline.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src import patching, tfcompat
from gradscope._src.frontends.program import analyse, fit, graphs, names, sites, var_lists
from gradscope._src.frontends.program.replicas import Part, combined
from gradscope._src.frontends.program.watch import Static
from gradscope._src.frontends.python import frames
from gradscope._src.results import causes
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.run import FUNCTION, GRAPH


def graph_gradients(
    calls: Any,
    helper: Callable[..., Any],
    api: str,
    ys: Sequence[Any],
    xs: Sequence[Any],
    grads: Sequence[Any],
    stops: Sequence[Any],
    every: bool = False,
) -> None:
    """Analyse a graph-level gradient call the program just made (``calls``: the run's
    ``calls.Calls``, which holds the watcher and the sessions; ``every``: ``xs`` are every
    trainable variable, ``compute_gradients``/``minimize`` given no ``var_list``)."""
    graph = ys[0].graph
    mode = FUNCTION if getattr(graph, "outer_graph", None) is not None else GRAPH
    if mode == FUNCTION:  # a custom train_step's tf.gradients: what Keras' traced step trains
        calls.traces.gradients(list(xs), list(grads))
    state = calls.watcher.at(sites.chain(), api, mode)
    tensors = [graphs.source_tensor(graph, x) for x in xs]
    made = [g for g in grads if g is not None]
    first_grad_op = min((_first_op_id(g) for g in made), default=None)
    ops = [op for op in graph.get_operations()
           if first_grad_op is None or op._id < first_grad_op]  # fmt: skip
    stopped = [s for s in stops if hasattr(s, "op")]
    call = graphs.GraphCall(ops, tensors, list(ys))
    call.stop(stopped)
    held = names.held_as(list(xs), sys._getframe(1))  # the user's names of tensor sources
    statics = names.statics(list(xs), list(grads), call, calls.recorder.created, held)
    found = [t for t in tensors if t is not None]
    with calls.watcher.own_work():
        try:
            got = in_copy(call, graph, ys, stopped, helper, found)
        except Exception:
            calls.watcher.notes.append(f"{state.site}: cut points not analysed (graph copy)")
        else:
            answers = iter(got)
            for s, t in zip(statics, tensors, strict=True):
                s.has_gradient = t is not None and next(answers) is not None
    analyse.analyse(call.problem, statics, call.locate, call.visible, call.inside)
    analyse.through_zero_derivative(call.problem, statics, lambda k: call.locate(k, "").source)
    if every:
        analyse.no_var_list(statics, api)
    _fed(statics, tensors, graph, first_grad_op, every)
    analyse.filled(statics, grads)  # unconnected_gradients=ZERO: the program received zeros
    static = Static(statics, sites.text(frames.of_op(ys[0].op)))
    if mode == GRAPH and not every:
        static.left_out = var_lists.left_out(graph, ys, xs, sys._getframe(1))
    if mode == FUNCTION:
        parts = calls.gathering.add(state, Part(static, list(ys), list(grads)), graph)
        if not parts:
            return  # inside strategy.run: measured once every replica has made the call
        static = combined(parts) if len(parts) > 1 else static
        state.unrun.append(static)
        calls._in_functions(state)
        calls._numbers_in_graph(state, static, list(ys), list(grads), sources=list(xs),
                                parts=parts)  # fmt: skip
    else:
        state.unrun.append(static)
        calls.sessions.add(graph, state, static, list(ys), list(grads))


def in_copy(call: graphs.GraphCall, graph: Any, ys: Sequence[Any], stops: Sequence[Any],
            helper: Callable[..., Any], sources: Sequence[Any] = ()) -> list[Any]:  # fmt: skip
    """Which tensors on the paths of ``call`` receive a gradient of ``ys``, asked of TensorFlow
    in a copy of ``graph`` (the program's graph gains no op, no name changes); the answers go
    into ``call``.

    Args:
        call: the call's ``GraphCall``.
        graph: the program's graph ``ys`` are in.
        ys: the targets.
        stops: tensors the call treats as constants (``stop_gradients``).
        helper: TensorFlow's own ``_GradientsHelper`` (unwatched).
        sources: tensors of ``graph`` asked too.

    Returns:
        Per tensor of ``sources``, None where no gradient arrives.
    """
    probe_ids = analyse.probes(call.problem)
    asked = [*sources, *call.probe_tensors(probe_ids)]
    if not asked:
        return []  # nothing to ask: no copy of the graph
    got = graphs.received_by_copy(graph, ys, asked, stops, helper)
    call.received(probe_ids, got[len(sources) :])
    return got[: len(sources)]


def step_causes(loss: Any, variables: Sequence[Any], nones: Sequence[bool], model: Any = None,
                y_pred: Any = None, part: str = "") -> dict[int, analyse.Recorded]:  # fmt: skip
    """Why a traced train step gives each variable its None gradient: the Keras ``Monitor``
    sees the step's gradients where the optimizer gets them, and asks here about the traced
    step, as a watched call's sources are analysed. The path from the variable to the loss
    is cut (a ``stop_gradient``, an op with no gradient, an ``assign``: the op and the
    user's line), or there is none (an output no loss reads, a layer not on the path from the
    inputs to the outputs).

    Args:
        loss: the step's total loss, a tensor of the step's graph; or a list of them, whose
            sum's gradients were taken (the terms of the added losses).
        variables: the variables the step applies gradients to.
        nones: per variable, whether its gradient is None.
        model: the Keras model (to name an output no loss reads), or None.
        y_pred: the step's predictions as the loss received them, or None.
        part: the name of the loss part ``loss`` is, when it is one of several.

    Returns:
        Index in ``variables`` -> its cause, for each None gradient.
    """
    gradients_util = tfcompat.get("gradients_util")

    losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]
    graph = losses[0].graph
    tensors = [graphs.source_tensor(graph, v) for v in variables]
    last = max(t.op._id for t in losses)
    forward = [op for op in graph.get_operations() if op._id <= last]
    call = graphs.GraphCall(forward, tensors, losses)
    statics = [
        analyse.SourceStatic(sites.variable_name(v), tuple(v.shape), not none)
        for v, none in zip(variables, nones, strict=True)
    ]
    in_copy(call, graph, losses, [], gradients_util._GradientsHelper)
    analyse.analyse(call.problem, statics, call.locate, call.visible, call.inside)
    if model is not None and y_pred is not None:
        fit.explain(call, statics, variables, model, y_pred, part)
    return {i: analyse.recorded(analyse.status(s, None, None), s.cut_points, s.cause)
            for i, s in enumerate(statics) if nones[i]}  # fmt: skip


@dataclass(frozen=True)
class TapeCall:
    """One ``tape.gradient`` a traced train step made: the op ids its tape recorded
    (``(after, up_to]`` spans), its sources and its targets, and the id of the last op made
    before it (the graph as ``gradscope run`` sees it at that call)."""

    spans: tuple[tuple[int, int], ...]
    sources: tuple[Any, ...]
    targets: tuple[Any, ...]
    last: int
    nones: tuple[bool, ...] = ()  # per source, whether the tape gave it no gradient
    site: str = ""  # the user's line that asked (a Keras step's: its fit() line)


@contextlib.contextmanager
def tape_calls() -> Iterator[list[TapeCall]]:
    """Record the ``tape.gradient`` calls made in a ``tf.function`` trace while inside, with
    the ops each tape recorded, as ``gradscope run``'s hooks do (``hooks._tape``): the Keras
    ``Monitor`` then asks :func:`tape_causes` what ``run`` asks of the same call."""
    import tensorflow as tf

    seen: list[TapeCall] = []
    me = threading.get_ident()  # the thread tracing the step (a replica's, mirrored)

    def make_push(original: Any) -> Any:
        def push(self: Any) -> Any:
            result = original(self)
            if not tf.executing_eagerly():
                graph = tf.compat.v1.get_default_graph()
                self.__dict__.setdefault(_SPANS, []).append([graph, graphs.mark(graph), None])
            return result

        return push

    def make_pop(original: Any) -> Any:
        def pop(self: Any) -> Any:
            spans = self.__dict__.get(_SPANS)
            if spans and spans[-1][2] is None:
                spans[-1][2] = graphs.mark(spans[-1][0])
            return original(self)

        return pop

    def make_gradient(original: Any) -> Any:
        def gradient(self: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
            flat_t: list[Any] = []
            if not tf.executing_eagerly():
                graph = tf.compat.v1.get_default_graph()
                known = self.__dict__.get(_SPANS, ())
                spans = tuple((a, graphs.mark(graph) if b is None else b)
                              for g, a, b in known if g is graph)  # fmt: skip
                flat_t = [t for t in tf.nest.flatten(target) if tf.is_symbolic_tensor(t)]
                last = graphs.mark(graph) - 1
            grads = original(self, target, sources, *args, **kwargs)
            if flat_t:
                flat_s = tuple(tf.nest.flatten(sources))
                nones = tuple(g is None for g in tf.nest.flatten(grads, expand_composites=False))
                nones = nones if len(nones) == len(flat_s) else ()
                seen.append(TapeCall(spans, flat_s, tuple(flat_t), last, nones,
                                     sites.described()[0]))  # fmt: skip
            return grads

        return gradient

    with patching.Patches(when=lambda: threading.get_ident() == me) as patches:
        patches.set("GradientTape._push_tape", make_push)
        patches.set("GradientTape._pop_tape", make_pop)
        patches.set("GradientTape.gradient", make_gradient)
        yield seen


#: Where :func:`tape_calls` keeps a tape's spans (``gradscope run`` keeps its own).
_SPANS = "_gradscope_step_spans"


def tape_causes(call: TapeCall, variables: Sequence[Any], nones: Sequence[bool],
                model: Any = None, y_pred: Any = None) -> dict[int, analyse.Recorded]:  # fmt: skip
    """Why a tape in a traced train step gives each variable its None gradient, by the passes
    ``gradscope run`` makes for a watched ``tape.gradient`` in a ``tf.function``: the cut
    analysis of the ops the tape recorded, the ``tf.cond`` every path crosses, a path the
    tape never saw (``outside_notes``), the Keras causes, and where the last path ends
    (``dead_end_notes``).

    Args:
        call: the tape's call (:func:`tape_calls`).
        variables: the variables asked about (sources of ``call``).
        nones: per variable, whether its gradient is None.
        model: the Keras model (to name an output no loss reads), or None.
        y_pred: the step's predictions as the loss received them, or None.

    Returns:
        Index in ``variables`` -> its cause, for each None gradient.
    """
    statics = _tape_statics(call, variables, nones, model, y_pred)
    return {i: analyse.recorded(analyse.status(s, None, None), s.cut_points, s.cause)
            for i, s in enumerate(statics) if nones[i]}  # fmt: skip


def tape_zero_notes(call: TapeCall, variables: Sequence[Any], nones: Sequence[bool]
                    ) -> dict[int, str]:  # fmt: skip
    """What ``gradscope run`` says of a gradient of the same call that is all zero (the
    branch of a ``tf.cond`` not taken, a float16 underflow: ``analyse.zero_note``), per
    variable with a gradient; asked only once one is seen all zero.

    Args:
        call: the tape's call (:func:`tape_calls`).
        variables: the variables asked about (sources of ``call``).
        nones: per variable, whether its gradient is None.

    Returns:
        Index in ``variables`` -> the note, for each variable that has one.
    """
    statics = _tape_statics(call, variables, nones)
    found = {i: analyse.zero_cause(s) for i, s in enumerate(statics) if not nones[i]}
    return {i: str(cause) for i, cause in found.items() if cause is not None}


def _tape_statics(call: TapeCall, variables: Sequence[Any], nones: Sequence[bool],
                  model: Any = None, y_pred: Any = None) -> list[analyse.SourceStatic]:  # fmt: skip
    """The sources of ``call`` analysed as ``gradscope run`` analyses a watched call."""
    gradients_util = tfcompat.get("gradients_util")

    graph = call.targets[0].graph
    tensors = [graphs.source_tensor(graph, v) for v in variables]
    gcall = graphs.GraphCall(graphs.ops_in(graph, call.spans), tensors, list(call.targets))
    statics = [
        analyse.SourceStatic(sites.variable_name(v), tuple(v.shape), not none)
        for v, none in zip(variables, nones, strict=True)
    ]
    in_copy(gcall, graph, call.targets, [], gradients_util._GradientsHelper)
    analyse.analyse(gcall.problem, statics, gcall.locate, gcall.visible, gcall.inside)
    analyse.through_branches(gcall.problem, statics, lambda k: gcall.locate(k, "").source)
    analyse.through_zero_derivative(gcall.problem, statics,
                                    lambda k: gcall.locate(k, "").source)  # fmt: skip
    dead_ends = outside(graph, call.spans, tensors, list(call.targets), statics, call.last,
                        call.site)  # fmt: skip
    if model is not None and y_pred is not None:
        fit.explain(gcall, statics, variables, model, y_pred)
    dead_ends()
    return statics


def outside(graph: Any, spans: Sequence[tuple[int, int]], tensors: Sequence[Any],
            targets: Sequence[Any], statics: list[analyse.SourceStatic],
            last: int | None = None, site: str = "") -> Callable[[], None]:  # fmt: skip
    """Notes for sources a tape in a ``tf.function`` never saw reach its targets (computed
    before the tape started, or under ``stop_recording``: ``analyse.outside_notes``); returns
    what names the dead ends of the paths that remain unexplained (``dead_end_notes``), to
    run once the other causes had their say.

    Args:
        graph: the function's graph.
        spans: the op ids the tape recorded (``(after, up_to]``).
        tensors: the sources as ``graph`` sees them (None: not in it).
        targets: the targets.
        statics: the sources, analysed; notes set in place.
        last: the id of the last op made before the call (None: every op of ``graph``).
        site: the call's own ``FILE:LINE`` (``dead_end_notes``).
    """
    if all(s.reachable or s.has_gradient for s in statics):
        return lambda: None
    made = [op for op in graph.get_operations() if last is None or op._id <= last]
    whole = graphs.GraphCall(made, tensors, targets)

    def recorded(k: int) -> bool:
        return any(a < whole.x.tf_ops[k]._id <= b for a, b in spans)

    def where(k: int) -> str:
        return sites.text(frames.of_op(whole.x.tf_ops[k]))

    analyse.outside_notes(whole.problem, statics, recorded, where)
    return lambda: analyse.dead_end_notes(whole.problem, statics, recorded, where, site=site)


#: Ops that read a variable to set it up, not to compute with it.
_SETUP = frozenset({"Assign", "AssignVariableOp", "VarIsInitializedOp", "IsVariableInitialized"})
#: Ops that only hand a variable's value on: one nothing reads is no place the value goes.
_READS = frozenset({"ReadVariableOp", "Identity"})


def _fed(statics: Sequence[Any], tensors: Sequence[Any], graph: Any,
         before: int | None, every: bool) -> None:  # fmt: skip
    """Say what a source with no path to the call's target does feed: the last ops its
    value reaches in the graph built so far (another loss, a head's output), at the user's
    lines, so that a disconnected variable's cause names where it goes instead (after the
    no-``var_list`` cause, ``every``; a cause of another kind is left as it is)."""
    for static, tensor in zip(statics, tensors, strict=True):
        if tensor is None or static.reachable or static.has_gradient:
            continue
        if static.cause and not every:
            continue
        ends = causes.NeverRead(ends=tuple(_ends(tensor, graph, before)))
        static.cause = static.cause.then(ends) if static.cause else ends


def _ends(tensor: Any, graph: Any, before: int | None) -> list[CutPoint]:
    """The last ops (up to 3, latest first) that ``tensor``'s value reaches among those made
    before op id ``before`` (the call's own gradient ops, or any later op, left out)."""
    seen: set[int] = set()
    ends: list[Any] = []
    todo = [tensor.op]
    while todo:
        op = todo.pop()
        nexts = [c for out in op.outputs for c in out.consumers()
                 if (before is None or c._id < before) and c.type not in _SETUP]  # fmt: skip
        if not nexts and op is not tensor.op and op.type not in _READS:
            ends.append(op)
        for c in nexts:
            if c._id not in seen:
                seen.add(c._id)
                todo.append(c)
    ends.sort(key=lambda op: -op._id)
    return [CutPoint(op.name, op.type, "", sites.text(frames.of_op(op))) for op in ends[:3]]


def _first_op_id(grad: Any) -> int:
    values_ = getattr(grad, "values", None)
    tensor = values_ if values_ is not None else grad
    return int(tensor.op._id)
