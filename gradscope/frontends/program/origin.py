"""Where a NaN or an infinity first appeared in a watched call's gradient (as ``inspect``
finds it for a traced loss, ``engine/nan/origin.py``), from what the call's ops computed.

The call already asks the tape for the gradient of every tensor on the paths (the probes):
the first op in running order whose forward value is non-finite is the origin; when every
forward value is finite, the origin is the op nearest the target whose backward pass turned
finite gradients of its outputs into a non-finite gradient of an input. An eager call reads
the values the tape's ops kept; a call inside a ``tf.function`` gets, in the executions
gradscope measures and only when a gradient is non-finite, one more ``py_function`` with a
non-finite flag per probe and per probe gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradscope.engine import cuts as flow
from gradscope.frontends.program.analyse import Problem, SourceStatic, reaching
from gradscope.results.facts import NanOrigin

#: flow tensor id -> what is non-finite in it (``"nan"``, ``"inf"``, ``"-inf"``; "" none)
Look = Callable[[int], str]
_VALUES = ("nan", "inf", "-inf")


def find(problem: Problem, statics: Sequence[SourceStatic], nan: Sequence[bool],
         forward: Look, backward: Look, where: Callable[[int], str]) -> None:  # fmt: skip
    """Set ``nan_origin`` of each source whose gradient is non-finite (``nan``).

    Args:
        problem: the call's graph and targets.
        statics: the sources, in the order of ``problem.sources``; updated in place.
        nan: per source, whether its gradient has a NaN or an infinity.
        forward: what is non-finite in a tensor's value.
        backward: what is non-finite in a tensor's gradient (a source's: its own).
        where: the user's ``FILE:LINE`` of op ``index``.
    """
    graph = problem.graph
    if not any(nan) or not problem.targets:
        return
    reach = reaching(problem)
    for i, static in enumerate(statics):
        t = problem.sources[i]
        if not nan[i] or t is None:
            continue
        vsets = flow.variable_sets(graph, {t: 1})
        on = [k for k in range(len(graph.ops)) if vsets[k] and reach[k]]
        found = _forward(graph, on, forward) or _backward(graph, on, backward)
        if found is not None:
            k, kind, value = found
            op = graph.ops[k].type
            static.nan_origin = NanOrigin(op, op, where(k), kind, value)


def _forward(graph: flow.Graph, on: list[int], forward: Look) -> tuple[int, str, str] | None:
    for k in on:
        for t in graph.ops[k].outputs:
            value = forward(t)
            if value:
                return k, "forward", value
    return None


def _backward(graph: flow.Graph, on: list[int], backward: Look) -> tuple[int, str, str] | None:
    for k in reversed(on):
        op = graph.ops[k]
        if any(backward(t) for t in op.outputs):
            continue
        for t in graph.value_inputs(op):
            value = backward(t)
            if value:
                return k, "gradient", value
    return None


def eager(call: Any, statics: Sequence[SourceStatic], nan: Sequence[bool],
          grads: Sequence[Any]) -> None:  # fmt: skip
    """``find`` for an eager call (an ``EagerCall``, its probes' gradients received), from
    the values the tape's ops kept; ``grads``: per source, the gradient the tape returned."""
    from gradscope.frontends.program import sites

    received = dict(call.probe_grads)
    for t, g in zip(call.problem.sources, grads, strict=True):
        if t is not None and g is not None:
            received[t] = g
    find(call.problem, statics, nan, lambda t: _nonfinite(call.objects[t]),
         lambda t: _nonfinite(received.get(t)),
         lambda k: sites.text(call.sites[k]))  # fmt: skip


def in_graph(
    call: Any,
    statics: Sequence[SourceStatic],
    probes: Sequence[int],
    probe_grads: Sequence[Any],
    grads: Sequence[Any],
) -> Callable[[Any], None]:
    """For a call inside a ``tf.function`` (a ``graphs.GraphCall``): what adds, at the end of
    the trace and under gradscope's ``flag``, the ops that find the origin of a non-finite
    gradient in each measured execution that has one.

    Args:
        call: the call.
        statics: its sources; ``nan_origin`` is set in place when an execution finds one.
        probes: the flow ids of the probes asked for a gradient.
        probe_grads: their gradients (None: none).
        grads: per source, the gradient the tape returned.
    """
    problem = call.problem
    values = dict(zip(probes, call.probe_tensors(probes), strict=True))
    back = {t: g for t, g in zip(probes, probe_grads, strict=True) if g is not None}
    back.update({t: g for t, g in zip(problem.sources, grads, strict=True)
                 if t is not None and g is not None})  # fmt: skip
    own = list(grads)

    def add(flag: Any) -> None:
        import tensorflow as tf

        from gradscope.engine.nan import upstream

        mine = [(i, _dense(tf, g)) for i, g in enumerate(own) if g is not None]
        checked = [x for _, x in mine if x.dtype.is_floating or x.dtype.is_complex]
        if not checked:
            return
        fine = [tf.reduce_all(tf.math.is_finite(tf.math.real(x))) for x in checked]
        bad = tf.logical_not(tf.reduce_all(tf.stack(fine)))
        rows = [(t, x) for t, x in values.items() if _floating(x)]
        grad_rows = [(t, _dense(tf, g)) for t, g in back.items()]
        grad_rows = [(t, x) for t, x in grad_rows if _floating(x)]

        def look() -> Any:
            flags = [upstream.nonfinite_flags(tf, x) for _, x in rows + grad_rows]
            tf.py_function(lambda f: deliver(f.numpy()), [tf.stack(flags)], Tout=[])
            return tf.constant(0)

        def deliver(flags: Any) -> None:
            marks = [_VALUES[int(r.argmax())] if r.any() else "" for r in flags]
            ahead = dict(zip([t for t, _ in rows], marks[: len(rows)], strict=True))
            behind = dict(zip([t for t, _ in grad_rows], marks[len(rows) :], strict=True))
            nan = [bool(behind.get(t)) if t is not None else False for t in problem.sources]
            find(problem, statics, nan, lambda t: ahead.get(t, ""), lambda t: behind.get(t, ""),
                 lambda k: call.locate(k, "").source)  # fmt: skip

        when = bad if flag is None else tf.logical_and(tf.convert_to_tensor(flag), bad)
        tf.cond(when, look, lambda: tf.constant(0))

    return add


def _floating(x: Any) -> bool:
    return bool(x.dtype.is_floating or x.dtype.is_complex)


def _dense(tf: Any, g: Any) -> Any:
    return g.values if isinstance(g, tf.IndexedSlices) else tf.convert_to_tensor(g)


def _nonfinite(tensor: Any) -> str:
    """``"nan"``, ``"inf"`` or ``"-inf"``: what is non-finite in ``tensor`` ("" if none)."""
    import numpy as np

    if tensor is None:
        return ""
    values = getattr(tensor, "values", tensor)  # IndexedSlices: its values
    dtype = getattr(values, "dtype", None)
    if dtype is None or not (dtype.is_floating or dtype.is_complex):
        return ""
    array = np.asarray(values.numpy())
    if np.isnan(array).any():
        return "nan"
    if np.isposinf(array).any():
        return "inf"
    return "-inf" if np.isneginf(array).any() else ""
