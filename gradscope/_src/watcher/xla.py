"""Numbers out of an XLA-compiled ``tf.function``: written to a variable, read after the call.

XLA compiles no ``py_function``, so inside ``jit_compile`` the measuring ops hand their
scalars on by assigning them to a float64 variable (a "mailbox"); once the program's
outermost ``tf.function`` call returns, the mailboxes written since are read and delivered,
so the statuses and norms are TensorFlow's own values, as on the non-XLA path. The
measuring ops run on every execution (never in a ``tf.cond``: ``values.py`` says why, it
would change what XLA computes); the "still watching" flag chooses whether the mailbox is
written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src import tfcompat
from gradscope._src.watcher.watch import SiteState, Watcher


class Mailbox:
    """One measuring point compiled by XLA: element 0 counts the writes, then the scalars."""

    def __init__(self) -> None:
        self.var: Any = None
        self.seen = 0.0
        self.deliver: Callable[[Sequence[float]], None] | None = None

    def write(
        self, scalars: Sequence[Any], deliver: Callable[[Sequence[float]], None], flag: Any = None
    ) -> Any:
        """Inside the function being traced: the op writing ``scalars`` when ``flag`` (a
        boolean variable; None: always) holds; ``deliver`` gets them (as floats) after each
        call that wrote them."""
        import tensorflow as tf

        ResourceVariable = tfcompat.get("ResourceVariable")

        values = tf.stack([tf.cast(s, tf.float64) for s in scalars])
        if self.var is None:
            with tf.init_scope():  # made eagerly, as the flags are (flags.py)
                self.var = ResourceVariable(
                    tf.zeros([len(scalars) + 1], tf.float64), trainable=False
                )
        self.deliver = deliver
        old = self.var.read_value()
        on = tf.constant(True) if flag is None else flag.read_value()
        count = old[:1] + tf.cast(on, tf.float64)
        return self.var.assign(tf.where(on, tf.concat([count, values], 0), old))

    def read(self) -> None:
        """Deliver the scalars if a call wrote them since the last read."""
        if self.var is None or self.deliver is None:
            return
        box = self.var.numpy()
        if box[0] > self.seen:
            self.seen = float(box[0])
            self.deliver([float(x) for x in box[1:]])


class Boxes:
    """The mailboxes of one run's sites, read after each outermost ``tf.function`` call."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.open: list[tuple[SiteState, Mailbox]] = []

    def new(self, state: SiteState) -> Mailbox:
        """A mailbox for one traced measuring point of ``state``."""
        box = Mailbox()
        self.open.append((state, box))
        return box

    def after_call(self) -> None:
        """Deliver what the call wrote; forget the boxes of sites measured ``--steps`` times
        (their flags are off: nothing more is written)."""
        import tensorflow as tf

        if not self.open or not tf.executing_eagerly():
            return
        for _, box in self.open:
            box.read()
        if self.watcher.timeline is None:
            self.open = [(s, b) for s, b in self.open if not self.watcher.done(s)]
