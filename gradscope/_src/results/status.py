"""The words of a result: pair statuses, problem kinds and ``--numeric`` verdicts, as enums.

Each enum is a ``str``: ``Status.OK == "ok"``, JSON writes it as ``"ok"``, and formatting it
gives its value, so code and reports compare and print them as the contract spells them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


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


class ProblemKind(_Word):
    """What ``check`` fails on (contract section 5)."""

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


class FindingKind(_Word):
    """What a timeline finds over training (contract section 7) besides ``nan``; ``check
    --timeline`` fails on them as it does on a ``ProblemKind``."""

    DEAD = "dead"
    VANISHING = "vanishing"
    EXPLODING = "exploding"
    NO_GRADIENT = "none"


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
