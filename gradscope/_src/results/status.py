"""The words of a result: pair statuses, problem kinds and ``--numeric`` verdicts, as enums.

Each enum is a ``str``: ``Status.OK == "ok"``, JSON writes it as ``"ok"``, and formatting it
gives its value, so code and reports compare and print them as the contract spells them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any


class _Word(str, enum.Enum):
    """A ``str`` enum that prints and formats as its value on every Python (3.10 to 3.13)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Status(_Word):
    """A (loss, variable) pair's status (contract section 2), in the contract's order."""

    OK = "ok"
    ZERO = "zero"
    NAN = "nan"
    DISCONNECTED = "none:disconnected"
    STOPPED = "none:stopped"
    ASSIGN = "none:assign"
    NONDIFFERENTIABLE = "none:nondifferentiable"
    UNEXPLAINED = "none:unexplained"
    EXCLUDED = "excluded"
    FROZEN = "frozen"
    #: ``gradscope run`` only: a gradient exists, but nothing ever computed its value (a
    #: graph-mode call no ``Session.run`` ran), so it is neither ok, zero nor nan
    UNKNOWN = "unknown"

    @property
    def is_none(self) -> bool:
        """Whether TensorFlow returned no gradient (``none:*``)."""
        return self.value.startswith("none:")

    @property
    def has_gradient(self) -> bool:
        """Whether TensorFlow returned a gradient (``ok``, ``zero`` or ``nan``)."""
        return self in (Status.OK, Status.ZERO, Status.NAN)


class FindingKind(_Word):
    """Every kind of finding, one enum: what ``check`` fails on (contract section 5), what a
    run fails on (section 6), and what a timeline finds over training (section 7). The
    registry of kinds (``results/kinds.py``) holds each one's words."""

    UNEXPECTED_NONE = "unexpected-none"
    UNEXPECTED_CONNECTED = "unexpected-connected"
    NAN = "nan"
    NEVER_TRAINED = "never-trained"
    NUMERIC_DIFFERS = "numeric-differs"  # only with --numeric
    # only with --strategy (contract section 8; analysis/replicas.py)
    REPLICA_MISMATCH = "replica-mismatch"
    REPLICA_LOSS_SCALE = "replica-loss-scale"
    REPLICA_GRADIENT_DIFFERS = "replica-gradient-differs"
    REPLICA_VARIABLES_DIFFER = "replica-variables-differ"
    # only on JAX (gradscope run): an optimizer moved a variable no gradient reaches
    MOVED_WITHOUT_GRADIENT = "moved-without-gradient"
    # gradscope run: every path crosses an op whose gradient is 0 everywhere (tf.sign)
    ALWAYS_ZERO = "always-zero"
    # over training: a timeline's (contract section 7); ``check --timeline`` fails on them
    DEAD = "dead"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    NO_GRADIENT = "none"


#: The same enum under the name ``check``'s problems have always had.
ProblemKind = FindingKind

#: What ``check`` fails on (contract section 5), in the contract's order.
PROBLEM_KINDS: tuple[FindingKind, ...] = (
    FindingKind.UNEXPECTED_NONE,
    FindingKind.UNEXPECTED_CONNECTED,
    FindingKind.NAN,
    FindingKind.NEVER_TRAINED,
    FindingKind.NUMERIC_DIFFERS,
    FindingKind.REPLICA_MISMATCH,
    FindingKind.REPLICA_LOSS_SCALE,
    FindingKind.REPLICA_GRADIENT_DIFFERS,
    FindingKind.REPLICA_VARIABLES_DIFFER,
)


class Verdict(_Word):
    """An ``ok`` pair's gradient against finite differences (``--numeric``)."""

    AGREES = "agrees"
    DIFFERS = "differs"
    EXPECTED_DIFFERENCE = "expected-difference"
    SKIPPED = "skipped"


class CutKind(_Word):
    """How a cut point cut the last paths (contract section 2)."""

    STOPPED = "stopped"
    ASSIGN = "assign"
    NONDIFFERENTIABLE = "nondifferentiable"


def is_none(status: str) -> bool:
    """Whether ``status`` (a ``Status`` or its text) means TensorFlow returned no gradient."""
    return str(status).startswith("none:")


def has_gradient(status: str) -> bool:
    """Whether ``status`` (a ``Status`` or its text) means a gradient exists."""
    return status in (Status.OK, Status.ZERO, Status.NAN)


def overflow_skipped(status: str, loss_scaled: bool, later: Iterable[str]) -> bool:
    """Whether a non-finite gradient is one mixed precision's loss scale explains: under a
    dynamic loss scale Keras' ``LossScaleOptimizer`` skips a step whose gradients overflow and
    lowers its scale, so a ``nan`` that a later finite gradient of the same source follows
    (``later``: its later statuses) is a skipped step; one no finite gradient follows may be
    a real NaN."""
    finite = (Status.OK, Status.ZERO)
    return status == Status.NAN and loss_scaled and any(s in finite for s in later)


# -- the one status rule ------------------------------------------------------------------------


def cut_kind(kinds: Iterable[str]) -> CutKind | None:
    """The status kind when paths were cut in different ways: the first of stopped, assign,
    nondifferentiable (contract section 2; :class:`CutKind`'s order)."""
    present = {str(k) for k in kinds}
    return next((kind for kind in CutKind if kind.value in present), None)


def decide(
    *,
    has_gradient: bool,
    finite: bool = True,
    all_zero: bool = False,
    measured: bool = True,
    requested: bool = True,
    trainable: bool | None = None,
    reachable: bool = True,
    cut_points: Iterable[Any] = (),
) -> Status:
    """The status of one (loss, variable) pair from what TensorFlow answered: the one rule
    (contract section 2's table), which every door asks: a spec's or a target's pairs
    (``engine/status.status_of``), a watched call's sources, a timeline's records (the
    Monitor's and ``run --timeline``'s), the fixes' context.

    Args:
        has_gradient: TensorFlow returned a gradient (not None).
        finite: every element of it is finite (no NaN, no infinity).
        all_zero: every element of it is exactly zero (an empty gradient is all zero).
        measured: its value was computed (a graph-mode gradient no ``Session.run`` ran: no).
        requested: the gradient was asked for (the variable is in the loss's ``var_list``,
            or Keras' train step trains it).
        trainable: the variable's ``trainable`` flag, when known: one not requested is
            ``frozen`` when it is not trainable, else ``excluded``.
        reachable: a path leads from the variable to the loss.
        cut_points: where the last paths were cut (each with a ``kind``, or a kind itself):
            the first kind of stopped, assign, nondifferentiable names a None's status.

    Example:
        >>> str(decide(has_gradient=True, all_zero=True))
        'zero'
        >>> str(decide(has_gradient=False, cut_points=["assign", "stopped"]))
        'none:stopped'
    """
    if not requested:
        return Status.FROZEN if trainable is False else Status.EXCLUDED
    if has_gradient:
        if not measured:
            return Status.UNKNOWN
        if not finite:
            return Status.NAN
        return Status.ZERO if all_zero else Status.OK
    if not reachable:
        return Status.DISCONNECTED
    kind = cut_kind(getattr(c, "kind", c) for c in cut_points)
    return Status.UNEXPLAINED if kind is None else Status(f"none:{kind}")
