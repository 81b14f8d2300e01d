"""What ``gradscope run`` needs to watch a program's own ``tf.distribute`` strategy.

``gradscope run --replicas N`` makes N devices before the program starts
(``distribute.run.for_program``), so the program's own ``MirroredStrategy()`` finds N. A
watched gradient call (``GradientTape.gradient``, ``tf.gradients``) asks ``replica_of()``
which replica it runs for: inside ``strategy.run`` each replica makes the call once (a thread
of its own under ``MirroredStrategy``), and ``frontends/program/replicas.py`` gathers the
replicas' calls into one execution, every replica's status and norm decided as the source's
own and the all-reduced gradient (the sum ``apply_gradients`` uses) the one it shows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["replica_of"]


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
