"""The report: statuses per loss x variable and the problems a reviewer must see; plain data.

No rendering here: ``gradscope._src.report`` renders these types. Each type owns its JSON shape
(``to_dict``): ``Report.to_dict()`` is the JSON report (contract section 5).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from gradscope._src.errors import SpecError
from gradscope._src.location import Location
from gradscope._src.results.causes import Cause
from gradscope._src.results.display import Displayed, rich_renderable
from gradscope._src.results.expect import Pattern
from gradscope._src.results.facts import REPORT_VERSION as REPORT_VERSION
from gradscope._src.results.facts import (
    CutPoint,
    NanOrigin,
    NumericCheck,
    NumericRun,
    VariableFacts,
    json_number,
)
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix
from gradscope._src.results.loaded import Loaded
from gradscope._src.results.picture import Picture
from gradscope._src.results.replicas import DistributedFacts, ReplicaResult
from gradscope._src.results.status import PROBLEM_KINDS as _PROBLEM_KINDS
from gradscope._src.results.status import ProblemKind, Status, Verdict
from gradscope._src.results.status import has_gradient as has_gradient
from gradscope._src.results.status import is_none as is_none

# The statuses, problem kinds and verdicts by their short names (``m.OK``, ``m.NEVER_TRAINED``).
OK, ZERO, NAN = Status.OK, Status.ZERO, Status.NAN
EXCLUDED, FROZEN = Status.EXCLUDED, Status.FROZEN
DISCONNECTED, STOPPED, ASSIGN = Status.DISCONNECTED, Status.STOPPED, Status.ASSIGN
NONDIFFERENTIABLE, UNEXPLAINED = Status.NONDIFFERENTIABLE, Status.UNEXPLAINED
#: Every status, in the order the contract lists them.
STATUSES = tuple(Status)

UNEXPECTED_NONE, UNEXPECTED_CONNECTED = (
    ProblemKind.UNEXPECTED_NONE,
    ProblemKind.UNEXPECTED_CONNECTED,
)
NAN_PROBLEM, NEVER_TRAINED = ProblemKind.NAN, ProblemKind.NEVER_TRAINED
NUMERIC_DIFFERS = ProblemKind.NUMERIC_DIFFERS
REPLICA_MISMATCH, REPLICA_LOSS_SCALE = ProblemKind.REPLICA_MISMATCH, ProblemKind.REPLICA_LOSS_SCALE
REPLICA_GRADIENT_DIFFERS = ProblemKind.REPLICA_GRADIENT_DIFFERS
REPLICA_VARIABLES_DIFFER = ProblemKind.REPLICA_VARIABLES_DIFFER
PROBLEM_KINDS = _PROBLEM_KINDS

AGREES, DIFFERS = Verdict.AGREES, Verdict.DIFFERS
EXPECTED_DIFFERENCE, SKIPPED = Verdict.EXPECTED_DIFFERENCE, Verdict.SKIPPED
VERDICTS = tuple(Verdict)


@dataclass(frozen=True)
class NumericResult:
    """An ``ok`` pair's gradient against finite differences: the check and its verdict.

    ``reason`` says why a difference is expected (a straight-through estimator, a custom
    gradient) or why the check was skipped; ``pattern`` is the ``expect.<loss>.numeric``
    pattern that asks this pair to agree, if any.
    """

    verdict: Verdict
    check: NumericCheck
    reason: str = ""
    pattern: Pattern | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.check
        return {
            "verdict": str(self.verdict),
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
    status: Status
    norm: float | None
    shape: tuple[int | None, ...]
    sparse: bool
    cut_points: tuple[CutPoint, ...] = ()
    nan_origin: NanOrigin | None = None  # ``nan`` pairs: where the NaN/Inf first appeared
    numeric: NumericResult | None = None  # ``ok`` pairs of a ``--numeric`` run
    replicas: tuple[ReplicaResult, ...] = ()  # each replica's status, under ``--strategy``
    fix: Fix | None = None  # what to change so the gradient flows (``analysis/fixes.py``)
    #: why a ``none:disconnected`` pair has no path, when the front-end knows (its words are
    #: ``note`` in JSON, as a ``gradscope run`` source's)
    cause: Cause | None = None

    @property
    def note(self) -> str:
        """The cause in words ("" when none is known)."""
        return str(self.cause) if self.cause is not None else ""

    def to_dict(self) -> dict[str, Any]:
        """A pair; ``nan_origin`` on every ``nan`` pair (null when it could not be found),
        ``numeric`` on every ``ok`` pair of a ``--numeric`` run."""
        out: dict[str, Any] = {
            "status": str(self.status),
            "norm": self.norm,
            "shape": list(self.shape),
            "sparse": self.sparse,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }
        if self.status == NAN:
            out["nan_origin"] = self.nan_origin.to_dict() if self.nan_origin else None
        if self.numeric is not None:
            out["numeric"] = self.numeric.to_dict()
        if self.replicas:
            out["replicas"] = [r.to_dict() for r in self.replicas]
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        if self.cause is not None:
            out["note"] = str(self.cause)
            out["cause"] = self.cause.to_dict()
        return out


@dataclass(frozen=True)
class LossResult:
    """One loss: its value and a pair per variable, in the model's variable order."""

    name: str
    value: float | None  # NaN or Inf as computed; JSON has null for those (not valid JSON)
    pairs: tuple[PairResult, ...]
    source: str = ""
    notes: tuple[str, ...] = ()
    fix: Fix | None = None  # what its ``grad_loss`` multiplier does (``analysis/fixes``)
    #: the loss's own causes (a variable it makes on every call), each also in ``notes``
    causes: tuple[Cause, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": json_number(self.value),
            "variables": {p.variable: p.to_dict() for p in self.pairs},
        }
        if self.notes:
            out["notes"] = list(self.notes)
        if self.fix is not None:
            out["fix"] = self.fix.to_dict()
        return out

    def pair(self, variable: str) -> PairResult:
        """The pair of ``variable`` (a lookup: reports ask it per variable and loss)."""
        return self._by_variable[variable]

    @functools.cached_property
    def _by_variable(self) -> dict[str, PairResult]:
        index: dict[str, PairResult] = {}
        for p in self.pairs:
            index.setdefault(p.variable, p)
        return index


#: Something ``check`` fails on: a :class:`Finding` (one type for every result's problems),
#: made by ``Finding.problem(loss, variable, kind, message, cut_points, spec, line, ...)``.
Problem = Finding


@dataclass(frozen=True)
class Report(Displayed):
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
    distributed: DistributedFacts | None = None  # the strategy and its checks, with --strategy
    route: str = "traced"  # how the numbers were computed (``RunFacts.route``)
    loaded: Loaded | None = None  # a .keras, .h5 or SavedModel target: how it was loaded

    def loss(self, name: str) -> LossResult:
        for loss in self.losses:
            if loss.name == name:
                return loss
        raise KeyError(name)

    def picture(self, loss: str) -> Picture | None:
        """The gradient-flow picture of ``loss``, if the run drew one."""
        return next((p for p in self.pictures if p.loss == loss), None)

    def loss_option(self, loss: str) -> str:
        """What ``--loss`` says to pick ``loss`` again (a saved model's: what computes it)."""
        return self.loaded.loss_option(loss) if self.loaded is not None else loss

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

    def findings(self) -> tuple[Finding, ...]:
        """Every problem (known ones included), in the report's order, each in the report's
        file when it names none of its own (a Python target's), and belonging to it."""
        return tuple(
            p if p.location.file and p.report else replace(
                p, location=Location(p.location.file or self.spec, p.location.line),
                report=p.report or self.spec)
            for p in self.problems
        )  # fmt: skip

    def header(self) -> dict[str, Any]:
        """The first keys of the JSON report (also of ``diff``'s)."""
        return {"gradscope": REPORT_VERSION, "spec": self.spec, "name": self.name,
                "tensorflow": self.tensorflow, "device": self.device}  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (contract section 5): ``problems`` holds what ``check`` fails on;
        problems a baseline already holds go to ``known_problems`` (present only when there
        are any)."""
        out = self.header()
        out["losses"] = {x.name: x.to_dict() for x in self.losses}
        out["problems"] = [p.problem_dict() for p in self.failures]
        out["route"] = self.route
        out["variables"] = {v.name: v.to_dict() for v in self.variables}
        if self.known:
            out["known_problems"] = [p.problem_dict() for p in self.known]
        if self.notes:
            out["notes"] = list(self.notes)
        if self.numeric is not None:
            out["numeric"] = self.numeric.to_dict()
        if self.distributed is not None:
            out["distribution"] = self.distributed.to_dict()
        if self.loaded is not None:
            out["loaded"] = self.loaded.to_dict()
        return out

    def __rich__(self) -> Any:
        """How rich consoles and notebooks print it: the inspect table."""
        return rich_renderable(self)
