"""A cut point: where the last paths from a variable to a loss were cut (contract section 2)."""

from __future__ import annotations

from dataclasses import dataclass

from gradscope.printable import escape_fields

#: The ops that cut a gradient on purpose (``tf.stop_gradient``); a cut point of kind
#: ``stopped`` at another op is a ``stop_gradients`` argument of the gradient call.
STOP_TYPES = frozenset({"StopGradient", "PreventGradient"})


@dataclass(frozen=True)
class CutPoint:
    """Where the last paths from a variable to a loss were cut (contract section 2)."""

    node: str
    op: str
    kind: str  # "stopped" | "assign" | "nondifferentiable"
    source: str  # FILE:LINE

    def __post_init__(self) -> None:
        escape_fields(self, "node", "source")  # one escaping of names
