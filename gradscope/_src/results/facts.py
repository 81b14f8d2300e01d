"""What the gradient stage found, as plain data: no tensors leave the engine."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

# CutPoint is re-exported: every stage reads it from here.
from gradscope._src.results.cut import CutPoint as CutPoint
from gradscope._src.results.picture import Picture

if TYPE_CHECKING:
    from gradscope._src.results.causes import Cause
    from gradscope._src.results.replicas import DistributedFacts, ReplicaFacts

#: The version of every JSON report (the contract's): its ``gradscope`` key.
REPORT_VERSION = 1


def json_number(value: float | None) -> float | None:
    """``value`` for JSON, which has no NaN or Infinity: those become null."""
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class NanOrigin:
    """Where a NaN or an infinity first appeared on the way to a ``nan`` pair's gradient.

    ``where`` is ``"forward"`` when a forward value became non-finite (the gradient then
    inherits it) and ``"gradient"`` when every forward value is finite and the backward pass
    of ``node`` made the gradient non-finite. ``value`` says what appeared first: ``"nan"``,
    ``"inf"`` or ``"-inf"``. ``op`` is the forward op's type (``Sqrt``); ``tf_op`` names the
    TensorFlow op whose output was the first non-finite value (``gradients/N2/Sqrt_grad/SqrtGrad``).
    """

    node: str
    op: str
    source: str  # FILE:LINE, "" when unknown
    where: str  # "forward" | "gradient"
    value: str  # "nan" | "inf" | "-inf"
    tf_op: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "op": self.op, "source": self.source, "where": self.where,
                "value": self.value, "tf_op": self.tf_op}  # fmt: skip


@dataclass(frozen=True)
class NumericCheck:
    """One pair's gradient compared with central finite differences (``--numeric``).

    ``max_rel_error`` is the largest error over the checked coordinates, each measured as
    ``|analytic - numeric| / max(|analytic|, |numeric|, floor)`` (the floor keeps coordinates
    near zero from dominating; ``engine/numeric/fd.py``). ``coordinates`` of the variable's
    ``size`` elements were checked, each with a step of ``step * max(1, |x|)`` in ``dtype``.
    ``causes`` are reasons a difference may be deliberate that the cut points do not show:
    an op with a gradient of its own on the pair's paths (``tf.custom_gradient``, kind
    ``custom-gradient``), or an ``assign`` that overwrites the variable (kind ``assigned``:
    TensorFlow's gradient is that of the value each read sees, finite differences change
    only the value the variable starts with).
    ``skipped`` says why no comparison was made (then the numbers carry no information).
    """

    max_rel_error: float | None
    tolerance: float
    coordinates: int
    size: int
    step: float
    dtype: str
    worst: tuple[int, ...] | None = None  # the coordinate with the largest error
    analytic: float | None = None  # the gradient there
    numeric: float | None = None  # the finite difference there
    causes: tuple[CutPoint, ...] = ()
    skipped: str | None = None


@dataclass(frozen=True)
class NumericRun:
    """How a run's ``--numeric`` pass went: the dtype it ran in (``"float64"`` for a widened
    spec, None for the model's own dtypes), the most coordinates checked per variable, and
    how many times the losses were evaluated."""

    dtype: str | None
    coordinates: int
    evaluations: int

    def to_dict(self) -> dict[str, object]:
        return {"dtype": self.dtype, "coordinates": self.coordinates,
                "evaluations": self.evaluations}  # fmt: skip


@dataclass(frozen=True)
class VariableFacts:
    """A variable of the model, as reports name and locate it."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str
    trainable: bool
    source: str  # FILE:LINE where the variable (or the layer that made it) was written
    # the attribute the user's code reaches it by (``box_head.kernel`` for a Keras layer that
    # the path names ``dense_3``), when it says more than the name
    attribute: str = ""

    def to_dict(self) -> dict[str, object]:
        """A variable of the JSON report; ``attribute`` only when known."""
        out: dict[str, object] = {"shape": list(self.shape), "dtype": self.dtype,
                                  "trainable": self.trainable, "source": self.source}  # fmt: skip
        if self.attribute:
            out["attribute"] = self.attribute
        return out


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
    nan_origin: NanOrigin | None = None  # a ``nan`` pair's origin, when one was looked for
    numeric: NumericCheck | None = None  # the finite-difference check, with ``--numeric``
    #: each replica's gradient under ``--strategy`` (the fields above are the all-reduced one)
    replicas: tuple[ReplicaFacts, ...] = ()
    #: False: a gradient exists but its value was never computed (``gradscope run``: a
    #: graph-mode call no ``Session.run`` ran, a function traced and never called)
    measured: bool = True
    #: why there is no path, when the front-end knows (a Keras output no loss reads, a
    #: layer the model's call skips): a cause of ``results/causes.py``
    cause: Cause | None = None


@dataclass(frozen=True)
class LossFacts:
    """One loss: its value (summed when not scalar) and every variable's pair."""

    name: str
    value: float
    shape: tuple[int | None, ...]
    pairs: tuple[PairFacts, ...]
    notes: tuple[str, ...] = ()
    picture: Picture | None = None  # the gradient-flow picture, when asked for
    #: the loss's own causes (a variable it makes on every call), each also in ``notes``
    causes: tuple[Cause, ...] = ()

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
    numeric: NumericRun | None = None  # with ``--numeric``
    distributed: DistributedFacts | None = None  # with ``--strategy``
    #: how the numbers were computed: ``traced`` (one traced function with a backward graph
    #: per loss) or ``one-tape`` (one eager forward pass under one tape; engine/onetape.py)
    route: str = "traced"

    def loss(self, name: str) -> LossFacts:
        for loss in self.losses:
            if loss.name == name:
                return loss
        raise KeyError(name)
