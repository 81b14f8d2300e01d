"""Two losses side by side: who reaches which variable, and where their gradients pull apart.

Pure: a ``Diff`` is computed from the inspect ``Report`` and one ``Comparison`` of the same run
(the same single forward pass; nothing here runs TensorFlow). The numbers, per variable ``v``
that both losses reach, with ``gA`` and ``gB`` the two densified gradients:

- ``cosine = <gA, gB> / (|gA| |gB|)``, in [-1, 1]; None when either gradient is all zero or
  not finite, and for every variable that not both losses reach;
- ``sign_agreement``: the fraction of ``v``'s elements where ``sign(gA) == sign(gB)``, with
  ``sign(0) = 0`` (two zeros agree; a zero and a non-zero do not);
- ``norm_ratio = |gA| / |gB|`` (None when ``|gB|`` is 0);

and over the whole model, the ``cosine`` of the two gradients concatenated over every shared
variable with finite gradients: ``sum <gA, gB> / sqrt(sum |gA|^2 * sum |gB|^2)``. A variable is
*reached* by a loss when it gets a gradient (``ok``, ``zero`` or ``nan``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gradscope.analysis.diff_words import explain
from gradscope.results import report as m
from gradscope.results.display import Displayed, rich_renderable
from gradscope.results.facts import Comparison, CutPoint

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


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _cosine(dot: float | None, aa: float | None, bb: float | None) -> float | None:
    if dot is None or aa is None or bb is None or aa <= 0 or bb <= 0:
        return None
    # sqrt(aa * bb), not sqrt(aa) * sqrt(bb): exact when aa == bb, so A = -B gives exactly -1
    product = aa * bb
    if 0 < product < math.inf:
        value = dot / math.sqrt(product)
    else:  # the product under- or overflows; the square roots do not
        value = dot / math.sqrt(aa) / math.sqrt(bb)
    return max(-1.0, min(1.0, value))


def _squares(numbers: dict[str, float], name: str, pair: m.PairResult) -> float | None:
    """A side's squared norm: the engine's float64 sum, or the report's norm squared."""
    if name in numbers:
        return _finite(numbers[name])
    return None if pair.norm is None else pair.norm * pair.norm


def _shared(
    name: str, shape: tuple[int | None, ...], a: m.PairResult, b: m.PairResult, cmp: Comparison
) -> VariableDiff:
    dot = _finite(cmp.dots.get(name))
    aa = _squares(cmp.squares_a, name, a)
    bb = _squares(cmp.squares_b, name, b)
    finite = a.status != m.NAN and b.status != m.NAN
    ratio = a.norm / b.norm if a.norm is not None and b.norm else None
    return VariableDiff(
        name,
        shape,
        a,
        b,
        BOTH,
        dot=dot if finite else None,
        cosine=_cosine(dot, aa, bb) if finite else None,
        sign_agreement=_finite(cmp.sign_agreement.get(name)) if finite else None,
        norm_ratio=ratio,
    )


def _whole(rows: list[VariableDiff], cmp: Comparison) -> tuple[float | None, tuple[str, ...]]:
    used = [r for r in rows if r.reach == BOTH and r.dot is not None]
    left_out = tuple(r.variable for r in rows if r.reach == BOTH and r.dot is None)
    if not used:
        return None, left_out
    dot = sum(r.dot or 0.0 for r in used)
    aa = sum(_squares(cmp.squares_a, r.variable, r.a) or 0.0 for r in used)
    bb = sum(_squares(cmp.squares_b, r.variable, r.b) or 0.0 for r in used)
    return _cosine(dot, aa, bb), left_out


def compare(report: m.Report, comparison: Comparison) -> Diff:
    """The diff of a comparison's two losses, over every variable of the report.

    Args:
        report: the inspect report of the run; it must hold both losses.
        comparison: the dot products and sign agreements the same run computed.

    Returns:
        The ``Diff``, one ``VariableDiff`` per variable in the model's order.

    Example:
        >>> request = pipeline.Request(compare=(("loss_1", "loss_2"),))
        >>> out = pipeline.run("configs/multitask.yaml", request)
        >>> compare(out.report, out.facts.comparisons[0]).names(ONLY_A)
        ('task1/w', 'task1/b')
    """
    a, b = comparison.loss_a, comparison.loss_b
    loss_a, loss_b = report.loss(a), report.loss(b)
    rows: list[VariableDiff] = []
    for variable in report.variables:
        pa, pb = loss_a.pair(variable.name), loss_b.pair(variable.name)
        ra, rb = m.has_gradient(pa.status), m.has_gradient(pb.status)
        if ra and rb:
            rows.append(_shared(variable.name, variable.shape, pa, pb, comparison))
            continue
        reach = ONLY_A if ra else ONLY_B if rb else NEITHER
        text, cuts = explain(variable.name, (a, pa), (b, pb))
        rows.append(VariableDiff(variable.name, variable.shape, pa, pb, reach,
                                 explanation=text, cut_points=cuts))  # fmt: skip
    cosine, left_out = _whole(rows, comparison)
    return Diff(a, b, tuple(rows), cosine, left_out)


@dataclass(frozen=True)
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
