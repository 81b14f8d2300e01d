"""The report: statuses per loss x variable and the problems a reviewer must see; plain data."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gradscope.errors import SpecError
from gradscope.gradients.facts import CutPoint, NanOrigin, NumericCheck, NumericRun, VariableFacts
from gradscope.gradients.picture import Picture
from gradscope.spec.model import Pattern

REPORT_VERSION = 1

OK = "ok"
ZERO = "zero"
NAN = "nan"
EXCLUDED = "excluded"
FROZEN = "frozen"
DISCONNECTED = "none:disconnected"
STOPPED = "none:stopped"
ASSIGN = "none:assign"
NONDIFFERENTIABLE = "none:nondifferentiable"
UNEXPLAINED = "none:unexplained"

#: Every status, in the order the contract lists them.
STATUSES = (OK, ZERO, NAN, DISCONNECTED, STOPPED, ASSIGN, NONDIFFERENTIABLE, UNEXPLAINED,
            EXCLUDED, FROZEN)  # fmt: skip

#: Problem kinds (contract section 5).
UNEXPECTED_NONE = "unexpected-none"
UNEXPECTED_CONNECTED = "unexpected-connected"
NAN_PROBLEM = "nan"
NEVER_TRAINED = "never-trained"
NUMERIC_DIFFERS = "numeric-differs"  # only with --numeric
PROBLEM_KINDS = (UNEXPECTED_NONE, UNEXPECTED_CONNECTED, NAN_PROBLEM, NEVER_TRAINED,
                 NUMERIC_DIFFERS)  # fmt: skip

#: ``--numeric`` verdicts of an ``ok`` pair.
AGREES = "agrees"
DIFFERS = "differs"
EXPECTED_DIFFERENCE = "expected-difference"
SKIPPED = "skipped"
VERDICTS = (AGREES, DIFFERS, EXPECTED_DIFFERENCE, SKIPPED)


def is_none(status: str) -> bool:
    """Whether TensorFlow returned no gradient (``none:*``)."""
    return status.startswith("none:")


def has_gradient(status: str) -> bool:
    return status in (OK, ZERO, NAN)


def json_number(value: float | None) -> float | None:
    """``value`` for JSON, which has no NaN or Infinity: those become null."""
    return value if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class NumericResult:
    """An ``ok`` pair's gradient against finite differences: the check and its verdict.

    ``reason`` says why a difference is expected (a straight-through estimator, a custom
    gradient) or why the check was skipped; ``pattern`` is the ``expect.<loss>.numeric``
    pattern that asks this pair to agree, if any.
    """

    verdict: str
    check: NumericCheck
    reason: str = ""
    pattern: Pattern | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.check
        return {
            "verdict": self.verdict,
            "max_rel_error": c.max_rel_error,
            "tolerance": c.tolerance,
            "coordinates": c.coordinates,
            "size": c.size,
            "step": c.step,
            "dtype": c.dtype,
            "worst": list(c.worst) if c.worst is not None else None,
            "analytic": c.analytic,
            "numeric": c.numeric,
            "reason": self.reason or None,
            "expected_agreement": self.pattern is not None,
        }


@dataclass(frozen=True)
class PairResult:
    """One loss x one variable: its status and what explains it."""

    variable: str
    status: str
    norm: float | None
    shape: tuple[int | None, ...]
    sparse: bool
    cut_points: tuple[CutPoint, ...] = ()
    nan_origin: NanOrigin | None = None  # ``nan`` pairs: where the NaN/Inf first appeared
    numeric: NumericResult | None = None  # ``ok`` pairs of a ``--numeric`` run

    def to_dict(self) -> dict[str, Any]:
        """The pair in the JSON report; ``nan_origin`` on every ``nan`` pair (null when it
        could not be found), ``numeric`` on every ``ok`` pair of a ``--numeric`` run."""
        out: dict[str, Any] = {
            "status": self.status,
            "norm": self.norm,
            "shape": list(self.shape),
            "sparse": self.sparse,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }
        if self.status == NAN:
            out["nan_origin"] = self.nan_origin.to_dict() if self.nan_origin else None
        if self.numeric is not None:
            out["numeric"] = self.numeric.to_dict()
        return out


@dataclass(frozen=True)
class LossResult:
    """One loss: its value and a pair per variable, in the model's variable order."""

    name: str
    value: float | None  # NaN or Inf as computed; JSON has null for those (not valid JSON)
    pairs: tuple[PairResult, ...]
    source: str = ""
    notes: tuple[str, ...] = ()

    def pair(self, variable: str) -> PairResult:
        for p in self.pairs:
            if p.variable == variable:
                return p
        raise KeyError(variable)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": json_number(self.value),
            "variables": {p.variable: p.to_dict() for p in self.pairs},
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class Problem:
    """Something ``check`` fails on, with the place a reviewer should look."""

    loss: str | None
    variable: str | None
    kind: str
    message: str
    cut_points: tuple[CutPoint, ...] = ()
    spec: str = ""
    line: int = 1  # the spec line of the variable (never-trained, nan) or of the expectation
    known: bool = False  # already in the baseline

    def key(self) -> tuple[str, str | None, str | None, str]:
        """What identifies a problem across runs (for baselines)."""
        return (self.spec, self.loss, self.variable, self.kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "loss": self.loss,
            "variable": self.variable,
            "kind": self.kind,
            "message": self.message,
            "cut_points": [c.to_dict() for c in self.cut_points],
            "spec": self.spec,
            "source": f"{self.spec}:{self.line}",
            "known": self.known,
        }


@dataclass(frozen=True)
class Report:
    """The whole result of ``inspect`` (and of ``check``) for one spec or target."""

    spec: str
    name: str | None
    tensorflow: str
    device: str
    variables: tuple[VariableFacts, ...]
    losses: tuple[LossResult, ...]
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    pictures: tuple[Picture, ...] = ()  # per loss, when asked for; not in the JSON report
    numeric: NumericRun | None = None  # how the --numeric pass ran, when it did
    # expect patterns that match no variable (check refuses them); not in the JSON report
    unmatched: tuple[SpecError, ...] = ()

    def loss(self, name: str) -> LossResult:
        for loss in self.losses:
            if loss.name == name:
                return loss
        raise KeyError(name)

    def picture(self, loss: str) -> Picture | None:
        """The gradient-flow picture of ``loss``, if the run drew one."""
        return next((p for p in self.pictures if p.loss == loss), None)

    def pairs(self) -> Iterator[tuple[LossResult, PairResult]]:
        for loss in self.losses:
            for pair in loss.pairs:
                yield loss, pair

    @property
    def failures(self) -> tuple[Problem, ...]:
        """Problems that fail ``check``: those the baseline does not already hold."""
        return tuple(p for p in self.problems if not p.known)

    @property
    def known(self) -> tuple[Problem, ...]:
        """Problems the baseline already holds: shown, marked known, never failing."""
        return tuple(p for p in self.problems if p.known)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report of contract section 5.

        ``problems`` holds what ``check`` fails on; problems a baseline already holds go to
        ``known_problems`` (present only when there are any).
        """
        out: dict[str, Any] = {
            "gradscope": REPORT_VERSION,
            "spec": self.spec,
            "name": self.name,
            "tensorflow": self.tensorflow,
            "device": self.device,
            "losses": {loss.name: loss.to_dict() for loss in self.losses},
            "problems": [p.to_dict() for p in self.failures],
            "variables": {
                v.name: {
                    "shape": list(v.shape),
                    "dtype": v.dtype,
                    "trainable": v.trainable,
                    "source": v.source,
                }
                for v in self.variables
            },
        }
        if self.known:
            out["known_problems"] = [p.to_dict() for p in self.known]
        if self.notes:
            out["notes"] = list(self.notes)
        if self.numeric is not None:
            out["numeric"] = self.numeric.to_dict()
        out.update(self.extra)
        return out

    def __rich__(self) -> Any:
        from gradscope.report.table import report_renderable

        return report_renderable(self)
