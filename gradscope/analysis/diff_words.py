"""Why a loss does not reach a variable that the other one does, in one sentence."""

from __future__ import annotations

from collections.abc import Sequence

from gradscope.results import report as m
from gradscope.results.facts import CutPoint

Side = tuple[str, m.PairResult]  # (loss name, its pair for the variable)


def _listing(cuts: Sequence[CutPoint]) -> str:
    """``frozen (StopGradient)``, ``a (StopGradient) and b (ArgMax)``."""
    parts = [f"{c.node} ({c.op})" for c in cuts]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def why_not(variable: str, loss: str, pair: m.PairResult) -> str:
    """Why ``loss`` gives ``variable`` no gradient, naming the cut points.

    Example:
        >>> why_not("task1/w", "loss_5", stopped_pair)
        'loss_5 reaches task1/w only through frozen (StopGradient), so loss_5 never trains it'
    """
    status = pair.status
    if status == m.DISCONNECTED:
        return f"no path leads from {variable} to {loss}"
    if status == m.EXCLUDED:
        return f"{variable} is outside {loss}'s vars"
    if status == m.FROZEN:
        return f"{variable} is not trainable"
    if status == m.UNEXPLAINED or not pair.cut_points:
        return f"TensorFlow gives {loss} no gradient for {variable}, and no cause was found"
    cuts = _listing(pair.cut_points)
    never = f"so {loss} never trains it"
    if status == m.ASSIGN:
        copies = "copies" if len(pair.cut_points) == 1 else "copy"
        return f"{loss} sees {variable} only through {cuts}, which {copies} it into another "\
            f"variable, {never}"  # fmt: skip
    if status == m.NONDIFFERENTIABLE:
        has = "has" if len(pair.cut_points) == 1 else "have"
        return f"{loss} reaches {variable} only through {cuts}, which {has} no gradient, {never}"
    return f"{loss} reaches {variable} only through {cuts}, {never}"


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
