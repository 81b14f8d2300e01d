"""Shared wording and colours of ``gradscope diff`` for the human-readable formats."""

from __future__ import annotations

from gradscope._src.results.diff import BOTH, NEITHER, ONLY_A, Diff

#: How far apart two gradients must point before the table paints a cosine bold red.
STRONG_CONFLICT = -0.5


def cosine(value: float | None) -> str:
    """``+0.312``, ``-1.000``; ``-`` when there is none."""
    return "-" if value is None else f"{value:+.3f}"


def cosine_style(value: float | None) -> str:
    """Red when the gradients pull against each other, green when they agree."""
    if value is None:
        return "dim"
    if value < 0:
        return "bold red" if value <= STRONG_CONFLICT else "red"
    return "green" if value > 0 else ""


def percent(value: float | None) -> str:
    """``48.4%``; ``0%`` and ``100%`` exactly; ``-`` when there is none."""
    if value is None:
        return "-"
    if value in (0.0, 1.0):
        return f"{value:.0%}"
    return f"{100 * value:.1f}%"


def ratio(value: float | None) -> str:
    """A norm ratio with three significant digits: ``0.35``, ``1``, ``1.2e+03``."""
    return "-" if value is None else f"{value:.3g}"


def reach_label(diff: Diff, reach: str, *, quote: str = "") -> str:
    """``both``, ``only loss_1``, ``only loss_2``, ``neither``; names inside ``quote``."""
    if reach in (BOTH, NEITHER):
        return reach
    return f"only {quote}{diff.loss_a if reach == ONLY_A else diff.loss_b}{quote}"


def sources(diff: Diff, variable: str) -> str:
    """Where the cut points that explain a one-sided reach were written."""
    cuts = diff.variable(variable).cut_points
    return ", ".join(dict.fromkeys(c.source for c in cuts if c.source))
