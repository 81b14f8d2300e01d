"""Why a Keras train step gives a variable no gradient, as ``gradscope run`` says it for ``fit``.

The Monitor sees the step's gradients where the optimizer gets them; for each None it asks
the program front-end's cut analysis (``frontends/program``) about the traced step: the
path from the variable to the loss is cut (a ``stop_gradient``, an op with no gradient, an
``assign``: the op and the user's line), or there is none (an output no loss reads, a
layer not on the path from the inputs to the outputs). Which tensors get a gradient is
asked of TensorFlow in a copy of the step's graph, so the train step gains no op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.results import words


@dataclass(frozen=True)
class Cause:
    """Why one variable gets no gradient.

    Attributes:
        status: a ``none:*`` status (contract section 2).
        cut_points: the cut points as the timeline holds them (``node``, ``op``, ``kind``,
            ``source``), none when there is no path to cut.
        why: ``cut at`` the cut points (``node (Op) at FILE:LINE``), or why there is no
            path (empty when the analysis has no more to say than the status).
    """

    status: str
    why: str
    cut_points: tuple[dict[str, str], ...] = ()


def explain(loss: Any, variables: Sequence[Any], nones: Sequence[bool], model: Any = None,
            y_pred: Any = None, part: str = "") -> dict[int, Cause]:  # fmt: skip
    """The cause of each None gradient of a traced train step.

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
    from tensorflow.python.ops import gradients_util

    from gradscope._src.frontends.program import analyse, fit, graphs, sites
    from gradscope._src.frontends.program.analyse import SourceStatic

    losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]
    graph = losses[0].graph
    tensors = [graphs.source_tensor(graph, v) for v in variables]
    last = max(t.op._id for t in losses)
    forward = [op for op in graph.get_operations() if op._id <= last]
    call = graphs.GraphCall(forward, tensors, losses)
    statics = [
        SourceStatic(sites.variable_name(v), tuple(v.shape), not none)
        for v, none in zip(variables, nones, strict=True)
    ]
    probe_ids = analyse.probes(call.problem)
    if probe_ids:
        helper = gradients_util._GradientsHelper
        got = graphs.received_by_copy(graph, losses, call.probe_tensors(probe_ids), [], helper)
        call.received(probe_ids, got)
    analyse.analyse(call.problem, statics, call.locate, call.visible)
    if model is not None and y_pred is not None:
        fit.explain(call, statics, variables, model, y_pred, part)
    out = {}
    for i, static in enumerate(statics):
        if nones[i]:
            status = str(analyse.status(static, None, None))
            points = tuple(
                {"node": c.node, "op": c.op, "kind": c.kind, "source": c.source}
                for c in static.cut_points
            )
            out[i] = Cause(status, words.cause(static.cut_points, static.note), points)
    return out
