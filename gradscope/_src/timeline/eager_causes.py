"""Causes of None gradients under ``run_eagerly``: the step traced once (never run), analysed.

An eager step leaves no graph to analyse. When a recorded eager step has a None gradient,
Keras' own ``train_step`` is traced once more into a ``tf.function`` graph on the same batch,
with the hooks watching it, and that graph is analysed as a traced step's is. The graph is
never run: no weight, optimizer or metric state changes.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from gradscope._src.timeline import step_grads


def explain(hooks: Any, step: Any, data: Any, new_trace: Any) -> None:
    """Give ``hooks`` the causes of the None gradients its eager steps recorded.

    Args:
        hooks: the :class:`~gradscope._src.timeline.keras_hooks.Hooks` of the fit.
        step: Keras' own ``train_step`` (unwrapped).
        data: the step's batch.
        new_trace: makes the empty record of one trace.
    """
    traced = _trace(hooks, step, data, new_trace)
    if traced is None or traced.loss is None or not traced.applied:
        return
    hooks._explain(traced)
    if not hooks.part_nones:
        return
    variables = [v for _, v in traced.applied]
    names = [hooks.path(v) for v in variables]
    with traced.loss.graph.as_default():
        parts = step_grads.parts(traced) if hooks.per_loss else []
        for part in parts:
            nones = [(part.name, n) in hooks.part_nones for n in names]
            hooks._explain_part(part, variables, nones, traced)


def _trace(hooks: Any, step: Any, data: Any, new_trace: Any) -> Any:
    """What the hooks saw while ``step`` was traced on ``data`` (None: it could not be)."""
    seen = []

    def traced_step(batch: Any) -> Any:
        hooks._trace = trace = new_trace()
        try:
            step(batch)
        finally:
            hooks._trace = None
        seen.append(trace)
        return tf.constant(0)

    try:
        tf.function(traced_step, autograph=False).get_concrete_function(data)
    except Exception:  # gradscope's failure never stops training: the Nones stay unexplained
        return None
    return seen[-1] if seen else None
