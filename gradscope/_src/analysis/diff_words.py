"""Why a loss does not reach a variable that the other one does, in one sentence."""

from __future__ import annotations

from gradscope._src.results import report as m
from gradscope._src.results import words
from gradscope._src.results.facts import CutPoint

Side = tuple[str, m.PairResult]  # (loss name, its pair for the variable)


def why_not(variable: str, loss: str, pair: m.PairResult) -> str:
    """Why ``loss`` gives ``variable`` no gradient, naming the cut points.

    Example:
        >>> why_not("task1/w", "loss_5", stopped_pair)
        'loss_5 reaches task1/w only through frozen (StopGradient), so loss_5 never trains it'
    """
    return words.why_not(variable, loss, pair.status, pair.cut_points)


def _neither(variable: str, a: Side, b: Side) -> str:
    (name_a, pa), (name_b, pb) = a, b
    if name_a == name_b:  # a loss compared with itself
        return why_not(variable, name_a, pa)
    if pa.status == pb.status == m.FROZEN:
        return f"{variable} is not trainable"
    if pa.status == pb.status == m.DISCONNECTED:
        return f"no path leads from {variable} to {name_a} or to {name_b}"
    if pa.status == pb.status == m.EXCLUDED:
        return f"{variable} is outside the vars of both {name_a} and {name_b}"
    return f"{why_not(variable, name_a, pa)}; {why_not(variable, name_b, pb)}"


def explain(variable: str, a: Side, b: Side) -> tuple[str, tuple[CutPoint, ...]]:
    """Why one of two losses (or neither) does not reach ``variable``, and the cut points.

    Args:
        variable: the variable's name.
        a: loss A's name and its pair for the variable.
        b: the same for loss B; at most one of the two pairs has a gradient.

    Returns:
        One sentence, and the cut points of the side(s) without a gradient.
    """
    (name_a, pa), (name_b, pb) = a, b
    if m.has_gradient(pa.status):
        return why_not(variable, name_b, pb), pb.cut_points
    if m.has_gradient(pb.status):
        return why_not(variable, name_a, pa), pa.cut_points
    cuts = pa.cut_points + tuple(c for c in pb.cut_points if c not in pa.cut_points)
    return _neither(variable, a, b), cuts
