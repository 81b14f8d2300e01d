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
from collections.abc import Sequence

from gradscope._src.analysis.diff_words import explain
from gradscope._src.results import report as m
from gradscope._src.results.diff import (
    BOTH,
    NEITHER,
    ONLY_A,
    ONLY_B,
    Diff,
    DiffMatrix,
    VariableDiff,
)
from gradscope._src.results.facts import Comparison


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


def matrix(report: m.Report, comparisons: Sequence[Comparison]) -> DiffMatrix:
    """The diff of every compared pair of losses, for the matrix of whole-model cosines."""
    return DiffMatrix(report, tuple(compare(report, c) for c in comparisons))
