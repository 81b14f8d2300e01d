"""Where a NaN or an infinity first appeared in an eager call's gradient (as ``inspect`` finds
it for a traced loss, ``engine/nan/origin.py``), from what the tape's ops computed.

The ops an eager tape recorded keep their output tensors, and the call already asks the tape
for the gradient of every tensor on the paths (the probes): the first op in running order
whose forward value is non-finite is the origin; when every forward value is finite, the
origin is the op nearest the target whose backward pass turned finite gradients of its
outputs into a non-finite gradient of an input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradscope.engine import cuts as flow
from gradscope.frontends.program import sites
from gradscope.frontends.program.analyse import SourceStatic, reaching
from gradscope.frontends.program.eager import EagerCall
from gradscope.results.facts import NanOrigin


def eager_origins(call: EagerCall, statics: Sequence[SourceStatic], nan: Sequence[bool],
                  grads: Sequence[Any]) -> None:  # fmt: skip
    """Set ``nan_origin`` of each source whose gradient is non-finite (``nan``).

    Args:
        call: the eager call, its probes' gradients received.
        statics: the sources, in the order of ``call.problem.sources``; updated in place.
        nan: per source, whether its gradient has a NaN or an infinity.
        grads: per source, the gradient the tape returned (None: none).
    """
    problem = call.problem
    graph = problem.graph
    if not any(nan) or not problem.targets:
        return
    received = dict(call.probe_grads)
    for t, g in zip(problem.sources, grads, strict=True):
        if t is not None and g is not None:
            received[t] = g
    reach = reaching(problem)
    for i, static in enumerate(statics):
        t = problem.sources[i]
        if not nan[i] or t is None:
            continue
        vsets = flow.variable_sets(graph, {t: 1})
        on = [k for k in range(len(graph.ops)) if vsets[k] and reach[k]]
        static.nan_origin = _forward(call, on) or _backward(call, on, received)


def _forward(call: EagerCall, on: list[int]) -> NanOrigin | None:
    for k in on:
        for t in call.ops[k].outputs:
            value = _nonfinite(call.objects[t])
            if value:
                return _origin(call, k, "forward", value)
    return None


def _backward(call: EagerCall, on: list[int], received: dict[int, Any]) -> NanOrigin | None:
    graph = call.problem.graph
    for k in reversed(on):
        op = graph.ops[k]
        outs = [received[t] for t in op.outputs if t in received]
        if any(_nonfinite(g) for g in outs):
            continue
        for t in graph.value_inputs(op):
            value = _nonfinite(received.get(t))
            if value:
                return _origin(call, k, "gradient", value)
    return None


def _origin(call: EagerCall, k: int, where: str, value: str) -> NanOrigin:
    kind = call.ops[k].type
    return NanOrigin(kind, kind, sites.text(call.sites[k]), where, value)


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
