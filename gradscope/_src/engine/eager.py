"""``--mode eager`` for a model the engine traced: every pair answered again by a
``GradientTape`` run eagerly on a fresh copy, as an eager training loop computes it.

Cut points stay those of the traced analysis (an eager run keeps no graph to find them in).
A loss with ``stop_gradients`` keeps its traced answer: a tape has no such argument.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from gradscope._src.engine import retrace
from gradscope._src.engine.protocol import LossEntry
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts


def answer(facts: RunFacts, rebuild: retrace.Rebuild) -> RunFacts:
    """``facts`` with every pair's gradient taken from an eager ``GradientTape``."""
    tf = import_tensorflow()
    model = rebuild.make()
    with rebuild.scope(), tf.GradientTape(persistent=True) as tape:
        entries, variables = model.trace()
    by_loss = {e.name: e for e in entries}
    by_name = {v.name: retrace.tf_variable(v.variable) for v in variables}
    losses = []
    for loss in facts.losses:
        entry = by_loss.get(loss.name)
        if entry is None or entry.stop_tensors:
            losses.append(loss)
            continue
        losses.append(_loss(tf, tape, entry, loss, by_name))
    said = (
        "--mode eager: every gradient comes from a GradientTape run eagerly; cut points are "
        "those of the traced graph"
    )
    notes = (*facts.notes, said)
    return dataclasses.replace(facts, losses=tuple(losses), notes=notes)


def _loss(
    tf: Any, tape: Any, entry: LossEntry, loss: LossFacts, variables: dict[str, Any]
) -> LossFacts:
    requested = [p for p in loss.pairs if p.requested and p.variable in variables]
    target = tf.convert_to_tensor(entry.tensor)
    upstream = None
    if entry.grad_ys is not None:
        upstream = tf.broadcast_to(tf.constant(entry.grad_ys, target.dtype), tf.shape(target))
    grads = tape.gradient(target, [variables[p.variable] for p in requested], upstream)
    found = dict(zip([p.variable for p in requested], grads, strict=True))
    pairs = tuple(_pair(tf, p, found[p.variable]) if p.variable in found else p for p in loss.pairs)
    value = float(tf.reduce_sum(tf.cast(tf.math.real(target), tf.float64)))
    return dataclasses.replace(loss, pairs=pairs, value=value)


def _pair(tf: Any, pair: PairFacts, grad: Any) -> PairFacts:
    if grad is None:
        return dataclasses.replace(pair, has_gradient=False, norm=None, finite=True, all_zero=False)
    values = tf.convert_to_tensor(grad)
    array = tf.cast(tf.abs(values) if values.dtype.is_complex else values, tf.float64).numpy()
    norm = float((array**2).sum() ** 0.5)
    finite = bool(math.isfinite(norm) and abs(array).max(initial=0.0) < math.inf)
    return dataclasses.replace(
        pair,
        has_gradient=True,
        norm=norm if math.isfinite(norm) else None,
        finite=finite,
        all_zero=finite and not array.any(),
        sparse=isinstance(grad, tf.IndexedSlices),
    )
