"""Where a NaN or an infinity first appeared in a watched call's gradient (as ``inspect``
finds it for a traced loss, ``engine/nan/origin.py``), from what the call's ops computed.

The call already asks the tape for the gradient of every tensor on the paths (the probes):
the first op in running order whose forward value is non-finite is the origin; when every
forward value is finite, the origin is the op nearest the target whose backward pass turned
finite gradients of its outputs into a non-finite gradient of an input. An eager call reads
the values the tape's ops kept; a call inside a ``tf.function`` hands its probes' gradients
to the one ``py_function`` of the executions gradscope measures (``values.in_graph``), which
reads them in numpy only when a gradient is non-finite. It reads no forward value: an extra
reader of an intermediate tensor changes what TensorFlow's optimizer fuses, and so what the
program computes, so inside a function the origin is always the backward one (the same op
and line for a ``log`` of zero or of a negative value behind a ``tf.where``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.results.facts import NanOrigin
from gradscope._src.watcher.analyse import Problem, SourceStatic, reaching

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
    from gradscope._src.watcher import sites

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
) -> InGraph:
    """For a call inside a ``tf.function`` (a ``graphs.GraphCall``): the gradients a measured
    execution hands the origin search, and what finds the origin from their values when one
    of the call's own gradients is non-finite (``values.in_graph`` passes them to its one
    ``py_function``, which runs in measured executions only).

    The gradients' values are read in numpy, never by ops added to the function: an op per
    probe (thousands for a ResNet's step) made tracing the step cost more than the step's
    own ops did, and the check ran in every execution.

    Args:
        call: the call.
        statics: its sources; ``nan_origin`` is set in place when an execution finds one.
        probes: the flow ids of the probes asked for a gradient.
        probe_grads: their gradients (None: none).
        grads: per source, the gradient the tape returned.
    """
    import tensorflow as tf

    problem = call.problem
    back = {t: g for t, g in zip(probes, probe_grads, strict=True) if g is not None}
    back.update({t: g for t, g in zip(problem.sources, grads, strict=True)
                 if t is not None and g is not None})  # fmt: skip
    own = [x for x in (_dense(tf, g) for g in grads if g is not None) if _floating(x)]
    # Forward values are never read here: a consumer added to an intermediate tensor
    # changes what Grappler fuses (MatMul+BiasAdd+Relu), and so the step's rounding
    # (a watched Keras step's weights differed in the last bit). Gradients are read
    # already for the norms; the origin is the op whose backward pass made it.
    grad_rows = [(t, _dense(tf, g)) for t, g in back.items()]
    grad_rows = [(t, x) for t, x in grad_rows if _floating(x)]

    def mark(index: int, value: Any) -> bool | str:
        if index < len(own):  # as TensorFlow's is_finite of each gradient's real part says
            return _finite_real(value)
        return _flags(value)

    def deliver(marks: Sequence[bool | str]) -> None:
        if all(marks[: len(own)]):
            return
        behind = dict(zip([t for t, _ in grad_rows], marks[len(own) :], strict=True))
        nan = [bool(behind.get(t)) if t is not None else False for t in problem.sources]
        find(problem, statics, nan, lambda t: "", lambda t: str(behind.get(t, "")),
             lambda k: call.locate(k, "").source)  # fmt: skip

    return InGraph(own + [x for _, x in grad_rows], mark, deliver)


@dataclass(frozen=True)
class InGraph:
    """What a measured execution inside a ``tf.function`` hands the origin search:
    ``tensors`` (the call's own floating gradients, then those of every tensor on its
    paths, dense); ``mark``, which keeps of tensor ``index``'s value (an eager tensor) what
    the search reads (for the call's own gradients whether they are finite, for the others
    what is non-finite in them: ``"nan"``, ``"inf"``, ``"-inf"`` or ``""``); ``deliver``,
    called with every tensor's mark, which looks for the origin when one of the call's own
    gradients is non-finite."""

    tensors: list[Any]
    mark: Callable[[int, Any], bool | str]
    deliver: Callable[[Sequence[bool | str]], None]


def _finite_real(value: Any) -> bool:
    import numpy as np

    return bool(np.isfinite(np.real(_array(value))).all())


def _flags(value: Any) -> str:
    """What is non-finite in a gradient's value, real and imaginary parts alike (NaN first,
    then +Inf, then -Inf: ``upstream.nonfinite_flags``'s order)."""
    import numpy as np

    array = _array(value)
    if np.isfinite(array).all():  # the common case: one pass
        return ""
    parts = [np.real(array), np.imag(array)] if np.iscomplexobj(array) else [array]
    if any(np.isnan(p).any() for p in parts):
        return "nan"
    if any(np.isposinf(p).any() for p in parts):
        return "inf"
    return "-inf" if any(np.isneginf(p).any() for p in parts) else ""


def _array(value: Any) -> Any:
    """A gradient's value as numpy; float16 and bfloat16 as float32 (as the flags' ops did)."""
    import numpy as np

    array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if array.dtype.kind not in "fc" or array.dtype == np.float16:  # bfloat16: kind "V"
        array = array.astype(np.float32)
    return array


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
