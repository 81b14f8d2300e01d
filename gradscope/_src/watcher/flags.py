"""The "still watching" flags: boolean variables the measuring ops inside a ``tf.function``
sit behind, so executions after ``--steps`` skip them without a new trace."""

from __future__ import annotations

from typing import Any

from gradscope._src import tfcompat

#: Sites measured inside ``tf.function`` that can stop measuring after ``--steps``.
FLAGS = 64


class Flags:
    """A pool of flags, made on the program's first ``tf.function`` call."""

    def __init__(self) -> None:
        self.pool: list[Any] | None = None  # None: not made yet

    def make(self) -> None:
        """Make the pool, once, eagerly: a ``tf.function`` may not create variables after its
        first trace, so this runs before the program's first ``tf.function`` call.

        Not before the program starts: nothing may initialise TensorFlow before the program
        makes its strategy (``MultiWorkerMirroredStrategy()`` raises "Collective ops must be
        configured at program startup" otherwise). Made as ``ResourceVariable``, which skips
        the variable creators a strategy's ``scope()`` installs: a ``tf.Variable`` made inside
        it would be mirrored (and, across workers, made collectively).
        """
        import tensorflow as tf

        if self.pool is not None or not tf.executing_eagerly():
            return
        ResourceVariable = tfcompat.get("ResourceVariable")

        self.pool = [ResourceVariable(True, trainable=False)
                     for _ in range(FLAGS)]  # fmt: skip

    def take(self) -> Any:
        """A fresh flag, or None when the pool is used up or was never made (then every
        execution measures, and executions past ``--steps`` are dropped)."""
        return self.pool.pop() if self.pool else None
