"""The results of ``gradscope diff``: two losses side by side (``Diff``, ``DiffReport``) and
every pair at once (``DiffMatrix``). ``analysis/diff.py`` computes them; the numbers are
defined there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradscope._src.results import report as m
from gradscope._src.results.display import Displayed, rich_renderable
from gradscope._src.results.facts import CutPoint, json_number

BOTH = "both"
ONLY_A = "only_a"
ONLY_B = "only_b"
NEITHER = "neither"
#: Every reach, in the order reports list them.
REACHES = (BOTH, ONLY_A, ONLY_B, NEITHER)


@dataclass(frozen=True)
class VariableDiff:
    """One variable under both losses: each side's pair and, when both reach it, the numbers."""

    variable: str
    shape: tuple[int | None, ...]
    a: m.PairResult
    b: m.PairResult
    reach: str
    dot: float | None = None
    cosine: float | None = None
    sign_agreement: float | None = None
    norm_ratio: float | None = None
    explanation: str | None = None  # why one loss (or neither) does not reach it
    cut_points: tuple[CutPoint, ...] = ()  # the cut points that explain it

    def to_dict(self) -> dict[str, Any]:
        return {
            "reach": self.reach,
            "status_a": str(self.a.status),
            "status_b": str(self.b.status),
            "norm_a": self.a.norm,
            "norm_b": self.b.norm,
            "sparse_a": self.a.sparse,
            "sparse_b": self.b.sparse,
            "cosine": self.cosine,
            "sign_agreement": self.sign_agreement,
            "norm_ratio": self.norm_ratio,
            "dot": self.dot,
            "explanation": self.explanation,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }


@dataclass(frozen=True)
class Diff:
    """Two losses compared over every variable of the model, in the model's variable order."""

    loss_a: str
    loss_b: str
    variables: tuple[VariableDiff, ...]
    cosine: float | None  # the whole-model cosine over the shared variables
    left_out: tuple[str, ...] = ()  # shared variables with NaN, left out of ``cosine``

    def to_dict(self) -> dict[str, Any]:
        """The ``diff`` section of the JSON report (and each pair of the matrix's)."""
        return {
            "loss_a": self.loss_a,
            "loss_b": self.loss_b,
            "cosine": self.cosine,
            "reach": {r: list(self.names(r)) for r in REACHES},
            "conflicts": [v.variable for v in self.conflicts],
            "left_out": list(self.left_out),
            "variables": {v.variable: v.to_dict() for v in self.variables},
        }

    def variable(self, name: str) -> VariableDiff:
        for v in self.variables:
            if v.variable == name:
                return v
        raise KeyError(name)

    def names(self, reach: str) -> tuple[str, ...]:
        """The variables with this reach (``BOTH``, ``ONLY_A``, ``ONLY_B``, ``NEITHER``)."""
        return tuple(v.variable for v in self.variables if v.reach == reach)

    @property
    def shared(self) -> tuple[VariableDiff, ...]:
        return tuple(v for v in self.variables if v.reach == BOTH)

    @property
    def conflicts(self) -> tuple[VariableDiff, ...]:
        """Shared variables whose gradients point against each other, most negative first."""
        negative = [v for v in self.variables if v.cosine is not None and v.cosine < 0]
        return tuple(sorted(negative, key=lambda v: (v.cosine, v.variable)))

    def summary(self) -> str:
        """``5 variables: 2 shared, 1 only loss_1, 2 only loss_2, 0 neither · 1 conflict``."""
        counts = [len(self.names(r)) for r in REACHES]
        total = len(self.variables)
        parts = [
            f"{counts[0]} shared",
            f"{counts[1]} only {self.loss_a}",
            f"{counts[2]} only {self.loss_b}",
            f"{counts[3]} neither",
        ]
        n = len(self.conflicts)
        return (
            f"{total} variable{'s' if total != 1 else ''}: {', '.join(parts)} · "
            f"{n} conflict{'s' if n != 1 else ''}"
        )

    def whole_model(self) -> str:
        """The whole-model cosine in one line, saying what it was computed over."""
        shared = [v.variable for v in self.shared if v.variable not in self.left_out]
        if not self.shared:
            return f"whole model: no variable is reached by both {self.loss_a} and {self.loss_b}"
        over = f"{len(shared)} shared variable{'s' if len(shared) != 1 else ''}"
        left = f"; {', '.join(self.left_out)} left out (NaN)" if self.left_out else ""
        if self.cosine is None:
            return f"whole model: no cosine (a gradient is all zero over the {over}){left}"
        return f"whole model: cosine {self.cosine:+.3f} over {over}{left}"


@dataclass(frozen=True, repr=False)  # repr: the table (Displayed)
class DiffReport(Displayed):
    """``gradscope diff SPEC A B``: the inspect report of the two losses, and their diff."""

    report: m.Report
    diff: Diff

    @property
    def loss_a(self) -> m.LossResult:
        return self.report.loss(self.diff.loss_a)

    @property
    def loss_b(self) -> m.LossResult:
        return self.report.loss(self.diff.loss_b)

    def to_dict(self) -> dict[str, Any]:
        """The inspect JSON report of both losses plus ``diff``."""
        return {**self.report.to_dict(), "diff": self.diff.to_dict()}

    def __rich__(self) -> Any:
        """How rich consoles and notebooks print it: the side-by-side table."""
        return rich_renderable(self)


@dataclass(frozen=True, repr=False)  # repr: the table (Displayed)
class DiffMatrix(Displayed):
    """``gradscope diff SPEC``: the whole-model cosine of every pair of losses."""

    report: m.Report
    diffs: tuple[Diff, ...]

    @property
    def losses(self) -> tuple[str, ...]:
        return tuple(loss.name for loss in self.report.losses)

    def pair(self, a: str, b: str) -> Diff | None:
        """The diff of two losses (in either order), or None if it was not computed."""
        for d in self.diffs:
            if (d.loss_a, d.loss_b) in ((a, b), (b, a)):
                return d
        return None

    def cosine(self, a: str, b: str) -> float | None:
        """The whole-model cosine of two losses; 1 for a loss with itself (if it has one)."""
        if a == b:
            flowing = any(p.status == m.OK for p in self.report.loss(a).pairs)
            return 1.0 if flowing else None
        d = self.pair(a, b)
        return None if d is None else d.cosine

    @property
    def conflicts(self) -> tuple[Diff, ...]:
        """Pairs of losses whose gradients point against each other, most negative first."""
        negative = [d for d in self.diffs if d.cosine is not None and d.cosine < 0]
        return tuple(sorted(negative, key=lambda d: (d.cosine, d.loss_a, d.loss_b)))

    def summary(self) -> str:
        """``4 losses, 6 pairs: 1 in conflict, 4 aligned, 1 with no cosine``."""
        cosines = [d.cosine for d in self.diffs]
        counts = {
            "in conflict": sum(1 for c in cosines if c is not None and c < 0),
            "aligned": sum(1 for c in cosines if c is not None and c > 0),
            "orthogonal": sum(1 for c in cosines if c == 0),
            "with no cosine": sum(1 for c in cosines if c is None),
        }
        parts = [f"{n} {what}" for what, n in counts.items() if n or what == "in conflict"]
        losses, pairs = len(self.losses), len(self.diffs)
        return (
            f"{losses} loss{'es' if losses != 1 else ''}, {pairs} pair{'s' if pairs != 1 else ''}"
            f": {', '.join(parts)}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: the cosine matrix, its conflicts, and every pair's diff."""
        out = self.report.header()
        out["losses"] = {x.name: {"value": json_number(x.value)} for x in self.report.losses}
        out["matrix"] = {a: {b: self.cosine(a, b) for b in self.losses} for a in self.losses}
        out["conflicts"] = [
            {"loss_a": d.loss_a, "loss_b": d.loss_b, "cosine": d.cosine} for d in self.conflicts
        ]
        out["pairs"] = [d.to_dict() for d in self.diffs]
        return out

    def __rich__(self) -> Any:
        """How rich consoles and notebooks print it: the cosine matrix table."""
        return rich_renderable(self)
