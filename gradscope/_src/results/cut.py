"""A cut point: where the last paths from a variable to a loss were cut (contract section 2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradscope._src.printable import escape_fields

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
    #: further places on the same path that lose the gradient again, ``"Cast at f.py:8"``
    #: (a later cast to an integer of a value made from this ``argmax``)
    later: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        escape_fields(self, "node", "source", "later")  # one escaping of names

    def to_dict(self) -> dict[str, Any]:
        """The cut point as JSON (contract section 2); ``later`` only when there are some."""
        out: dict[str, Any] = {"node": self.node, "op": self.op, "kind": str(self.kind),
                               "source": self.source}  # fmt: skip
        if self.later:
            out["later"] = list(self.later)
        return out
