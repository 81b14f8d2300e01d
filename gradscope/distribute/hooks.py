"""What ``gradscope run`` needs to watch a program's own ``tf.distribute`` strategy.

``gradscope run --strategy mirrored --replicas N`` calls ``prepare`` before the program starts,
so the program's own ``MirroredStrategy()`` finds N devices (logical CPU devices where there
are not enough GPUs). A watched gradient call (``GradientTape.gradient``, ``tf.gradients``)
asks ``replica_of()`` which replica it runs for: inside ``strategy.run`` each replica makes the
call once (MirroredStrategy: in a thread of its own; MultiWorkerMirroredStrategy: in each
worker). The watcher keeps one ``PairFacts`` per replica and source, and ``replicas_of`` turns
them into the per-pair ``replicas`` of the report, decided as ``inspect`` decides them; the
all-reduced gradient (the sum ``apply_gradients`` uses) is the pair's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradscope.distribute.run import prepare
from gradscope.results.facts import PairFacts
from gradscope.results.replicas import ReplicaFacts

__all__ = ["prepare", "replica_of", "replicas_of"]


def replica_of(tf: Any) -> tuple[int, int] | None:
    """``(replica, replicas)`` when called inside ``strategy.run`` of a strategy with more
    than one replica; None in the default strategy or in cross-replica code.

    The replica id is known when the call is traced (``tf.function``) or run eagerly:
    MirroredStrategy builds each replica's part separately, with a constant id.
    """
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync < 2:
        return None
    replica = tf.get_static_value(context.replica_id_in_sync_group)
    return None if replica is None else (int(replica), int(context.num_replicas_in_sync))


def replicas_of(per_replica: Sequence[PairFacts]) -> tuple[ReplicaFacts, ...]:
    """Each replica's facts of one pair, in replica order (``per_replica[i]`` is replica i)."""
    return tuple(
        ReplicaFacts(i, p.has_gradient, p.norm, p.finite, p.all_zero)
        for i, p in enumerate(per_replica)
    )
