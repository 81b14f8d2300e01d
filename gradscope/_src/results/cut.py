"""A cut point: where the last paths from a variable to a loss were cut (contract section 2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The ops that cut a gradient on purpose (``tf.stop_gradient``); a cut point of kind
#: ``stopped`` at another op is a ``stop_gradients`` argument of the gradient call.
STOP_TYPES = frozenset({"StopGradient", "PreventGradient"})

#: Floating inputs an op's registered gradient leaves without one although it passes gradient
#: to others (input index -> the argument's name in TensorFlow's Python API): a value fed
#: there gets no gradient from the loss, so the op is its cut (the batch norm's mean and
#: variance, ``tf.pad``'s constant, ``betainc``'s ``a`` and ``b``). Reviewed from
#: TensorFlow's ``nn_grad.py``, ``array_grad.py`` and ``math_grad.py``; checked against
#: ``tf.gradients`` by ``tests/engine/test_passing.py``. The analysis finds the cut with it
#: (``engine.graph.NONE_INPUTS``) and the fixes name the argument.
NONE_INPUT_NAMES: dict[str, dict[int, str]] = {
    "FusedBatchNorm": {3: "mean", 4: "variance"},
    "FusedBatchNormV2": {3: "mean", 4: "variance"},
    "FusedBatchNormV3": {3: "mean", 4: "variance"},
    "PadV2": {2: "constant_values"},
    "Betainc": {0: "a", 1: "b"},
    "Polygamma": {0: "a"},
    "Zeta": {0: "x"},
    "QuantizeAndDequantizeV2": {1: "input_min", 2: "input_max"},
    "QuantizeAndDequantizeV3": {1: "input_min", 2: "input_max"},
}


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
    #: the id of the cause (``results/causes.py``) the engine found the cut stands for, where
    #: its op type alone does not say it ("": the op type says it)
    cause: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The cut point as JSON (contract section 2); ``later`` only when there are some."""
        out: dict[str, Any] = {"node": self.node, "op": self.op, "kind": str(self.kind),
                               "source": self.source}  # fmt: skip
        if self.later:
            out["later"] = list(self.later)
        if self.cause:
            out["cause"] = self.cause
        return out
