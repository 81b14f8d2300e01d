"""Every pair of losses at once: the matrix of whole-model cosines (``gradscope diff SPEC``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradscope.analysis.diff import Diff, compare
from gradscope.results import report as m
from gradscope.results.display import Displayed, rich_renderable
from gradscope.results.facts import Comparison, json_number


@dataclass(frozen=True)
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


def matrix(report: m.Report, comparisons: Sequence[Comparison]) -> DiffMatrix:
    """The diff of every compared pair of losses, for the matrix of whole-model cosines."""
    return DiffMatrix(report, tuple(compare(report, c) for c in comparisons))
