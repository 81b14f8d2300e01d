"""What the gradient stage found, as plain data: no tensors leave ``gradients/``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gradscope.gradients.picture import Picture


@dataclass(frozen=True)
class CutPoint:
    """Where the last paths from a variable to a loss were cut (contract section 2)."""

    node: str
    op: str
    kind: str  # "stopped" | "assign" | "nondifferentiable"
    source: str  # FILE:LINE

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "op": self.op, "kind": self.kind, "source": self.source}


@dataclass(frozen=True)
class VariableFacts:
    """A variable of the model, as reports name and locate it."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str
    trainable: bool
    source: str  # FILE:LINE where the variable (or the layer that made it) was written


@dataclass(frozen=True)
class PairFacts:
    """One loss x one variable, as TensorFlow answered it.

    ``requested`` is False when no gradient was asked for (the variable is frozen or outside
    the loss's ``vars``); the other fields then carry no information.
    """

    variable: str
    requested: bool
    has_gradient: bool = False
    reachable: bool = False  # a forward path (data or assign) exists from variable to loss
    sparse: bool = False
    norm: float | None = None
    finite: bool = True
    all_zero: bool = False
    cut_points: tuple[CutPoint, ...] = ()


@dataclass(frozen=True)
class LossFacts:
    """One loss: its value (summed when not scalar) and every variable's pair."""

    name: str
    value: float
    shape: tuple[int | None, ...]
    pairs: tuple[PairFacts, ...]
    notes: tuple[str, ...] = ()
    picture: Picture | None = None  # the gradient-flow picture, when asked for

    def pair(self, variable: str) -> PairFacts:
        for p in self.pairs:
            if p.variable == variable:
                return p
        raise KeyError(variable)


#: In ``compare=``: every pair of the losses the run differentiates, in their order.
EVERY_PAIR = ("*", "*")


@dataclass(frozen=True)
class Comparison:
    """Two losses' gradients on the variables both reach: dot products and sign agreement.

    Every number is computed in float64 on the densified gradients; ``squares_a`` and
    ``squares_b`` are each side's sum of squares (its squared L2 norm) on the same variable.
    """

    loss_a: str
    loss_b: str
    dots: dict[str, float] = field(default_factory=dict)
    sign_agreement: dict[str, float] = field(default_factory=dict)
    squares_a: dict[str, float] = field(default_factory=dict)
    squares_b: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RunFacts:
    """Everything one run of the gradient stage found."""

    target: str
    tensorflow: str
    device: str
    variables: tuple[VariableFacts, ...]
    losses: tuple[LossFacts, ...]
    comparisons: tuple[Comparison, ...] = ()
    notes: tuple[str, ...] = ()

    def loss(self, name: str) -> LossFacts:
        for loss in self.losses:
            if loss.name == name:
                return loss
        raise KeyError(name)
