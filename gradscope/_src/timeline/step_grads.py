"""The gradients a due step of the Keras ``Monitor`` records: the ones the optimizer applies
(unscaled under mixed precision) and each loss part's, taken from the step's own graph or tape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf


def of_step(tape: tf.GradientTape | None, handles: list[Any]) -> Any:
    """``gradients(targets, variables)``, of the sum of ``targets`` (tensors the step made):
    of the step's tape, or of its graph (``handles``: the variables as the step's graph
    captured them; the ops go where the caller builds)."""
    if tape is not None:
        return lambda targets, variables: tape.gradient(targets, variables)
    from tensorflow.python.ops import gradients_util

    def gradients(targets: Any, variables: Any) -> Any:
        graph = handles[0].graph if handles else None
        return gradients_util._GradientsHelper(list(targets), handles, src_graph=graph)

    return gradients


def handle(variable: Any) -> Any:
    """The tensor of the current graph through which the step read ``variable``."""
    handle = variable.handle
    graph = tf.compat.v1.get_default_graph()
    return handle if getattr(handle, "graph", None) is graph else graph.capture(handle)


ADDED = "added_losses"  # the part of the losses a model adds (regularizers, add_loss)


@dataclass(frozen=True)
class Part:
    """One loss part of a step: its weighted value (float32), the step's own tensors whose
    sum it weighs, and the weight (None: 1)."""

    name: str
    value: Any
    targets: list[Any] = field(default_factory=list)
    weight: Any = None


def parts(trace: Any, build: bool = True) -> list[Part]:
    """The step's loss parts (none when there is only one, or across replicas: a replica's
    part gradients are its own, not the all-reduced ones). ``build=False``: only the names,
    building no op. A part's gradients are taken of its ``targets``, tensors the step itself
    made (a weight applied, or a sum built, after the step would be off its graph and its
    tape: no gradient), and then weighted."""
    strategy = tf.distribute.get_strategy()
    if strategy.num_replicas_in_sync > 1:
        return []
    names = [name for name, _, _ in trace.parts]
    names += [ADDED] if trace.added and names else []
    if len(names) < 2 or not build:
        return [Part(n, None) for n in names] if len(names) > 1 else []
    parts = []
    for name, value, weight in trace.parts:
        weighted = tf.cast(value, tf.float32) * (1.0 if weight is None else weight)
        parts.append(Part(name, weighted, [value], weight))
    if trace.added:
        total = tf.add_n([tf.reduce_sum(tf.cast(x, tf.float32)) for x in trace.added])
        parts.append(Part(ADDED, total, list(trace.added)))
    return parts


def loss_scaled(optimizer: Any) -> bool:
    """Whether ``optimizer`` is Keras' ``LossScaleOptimizer`` (mixed precision): it scales the
    loss, unscales the gradients, and skips a step whose gradients are not all finite."""
    return getattr(optimizer, "dynamic_scale", None) is not None and hasattr(
        optimizer, "inner_optimizer"
    )


def scale(optimizer: Any) -> Any:
    """The loss scale a ``LossScaleOptimizer`` (mixed precision) multiplied the loss by, read
    now (before it updates it); None for any other optimizer."""
    return tf.convert_to_tensor(optimizer.dynamic_scale) if loss_scaled(optimizer) else None


def unscaled(optimizer: Any, grads: list[Any], variables: list[Any], scale: Any) -> list[Any]:
    """The gradients a ``LossScaleOptimizer`` (mixed precision) hands its inner optimizer:
    divided by ``scale`` (:func:`scale`, the loss scale it multiplied the loss by), as it
    divides them. With no scale, as they are."""
    if scale is None:
        return grads
    overwrite = getattr(optimizer, "_overwrite_variable_with_gradient", lambda v: False)

    def unscale(x: Any) -> Any:
        return x / tf.cast(scale, x.dtype)

    return [g if g is None or overwrite(v) else _elementwise(g, unscale)
            for g, v in zip(grads, variables, strict=False)]  # fmt: skip


def weighted(gradient: Any, weight: Any) -> Any:
    """``gradient`` times ``weight`` (None: as it is)."""
    if gradient is None or weight is None:
        return gradient
    return _elementwise(gradient, lambda x: x * tf.cast(weight, x.dtype))


def _elementwise(gradient: Any, fn: Any) -> Any:
    """``fn`` of a gradient's values, a sparse gradient kept sparse."""
    if isinstance(gradient, tf.IndexedSlices):
        return tf.IndexedSlices(fn(gradient.values), gradient.indices, gradient.dense_shape)
    return fn(gradient)
