"""``--numeric`` verdicts: does an ``ok`` gradient agree with finite differences, and if not,
is the difference deliberate?

- ``agrees``: the largest relative error is within the tolerance.
- ``expected-difference``: it is not, but the gradient is not meant to be the loss's
  derivative: some of its paths are cut (a straight-through estimator's ``stop_gradient``,
  an ``assign``, an op with no gradient) or it passes an op with a gradient of its own
  (``tf.custom_gradient``). Not a problem, unless ``expect.<loss>.numeric`` names the
  variable: then the author asked for agreement and the verdict is ``differs``.
- ``differs``: it is not, and nothing explains it. ``check --numeric`` fails
  (``numeric-differs``).
- ``skipped``: no comparison was possible (a loss that is not deterministic, ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gradscope._src.results import report as m
from gradscope._src.results import words
from gradscope._src.results.expect import Expectation, Pattern
from gradscope._src.results.facts import CutPoint, NumericCheck, RunFacts

_WHY_CUT = {
    "stopped": "a straight-through estimator",
    "assign": "an assign passes no gradient",
    "nondifferentiable": "an op with no gradient",
}


def explanation(cuts: Sequence[CutPoint], causes: Sequence[CutPoint]) -> str:
    """Why a gradient may differ from the loss's derivative on purpose ('' when nothing does).

    Example:
        >>> explanation([CutPoint("gap", "StopGradient", "stopped", "x.yaml:17")], [])[:48]
        'its paths cut at `gap` (StopGradient), x.yaml:17'
    """
    parts = []
    if cuts:
        kinds = ", ".join(dict.fromkeys(_WHY_CUT.get(c.kind, c.kind) for c in cuts))
        parts.append(f"its paths cut at {words.cuts_quoted(cuts)} carry no gradient ({kinds})")
    custom = [c for c in causes if c.kind == "custom-gradient"]
    if custom:
        where = " and ".join(f"`{c.node}`{', ' + c.source if c.source else ''}" for c in custom)
        parts.append(f"it passes a gradient of its own (tf.custom_gradient) at {where}")
    written = [c for c in causes if c.kind == "assigned"]
    if written:
        parts.append(
            f"the model assigns to the variable at {words.cuts_quoted(written)}: the gradient is "
            "that of the value each read sees, finite differences change only its value before "
            "the assign"
        )
    return "; ".join(parts)


def verdict(
    check: NumericCheck, cuts: Sequence[CutPoint], pattern: Pattern | None = None
) -> m.NumericResult:
    """The verdict of one checked pair; ``pattern`` is the ``expect.<loss>.numeric`` pattern
    that names it, if any (the module docstring has the rules)."""
    if check.skipped is not None or check.max_rel_error is None:
        return m.NumericResult(m.SKIPPED, check, check.skipped or "not checked", pattern)
    if check.max_rel_error <= check.tolerance:
        return m.NumericResult(m.AGREES, check, "", pattern)
    why = explanation(cuts, check.causes)
    if why and pattern is None:
        return m.NumericResult(m.EXPECTED_DIFFERENCE, check, why, pattern)
    return m.NumericResult(m.DIFFERS, check, why, pattern)


def _first(patterns: Sequence[Pattern], name: str) -> Pattern | None:
    return next((p for p in patterns if p.matches(name)), None)


def judge(
    losses: Sequence[m.LossResult],
    expect: Sequence[Expectation],
    facts: RunFacts | None = None,
) -> list[m.LossResult]:
    """Every ``ok`` pair's numeric verdict, from ``facts`` (a ``--numeric`` run) or, without
    them, from the checks the pairs already hold (``expect`` given again, by ``check``)."""
    expectations = {e.loss: e for e in expect}
    out = []
    for loss in losses:
        e = expectations.get(loss.name)
        found = {p.variable: p.numeric for p in facts.loss(loss.name).pairs} if facts else {}
        pairs = []
        for pair in loss.pairs:
            check = found.get(pair.variable) if facts else getattr(pair.numeric, "check", None)
            if check is None or pair.status != m.OK:
                pairs.append(dataclasses.replace(pair, numeric=None))
                continue
            pattern = _first(e.numeric, pair.variable) if e else None
            result = verdict(check, pair.cut_points, pattern)
            pairs.append(dataclasses.replace(pair, numeric=result))
        out.append(dataclasses.replace(loss, pairs=tuple(pairs)))
    return out


def unheld_numeric(expect: Sequence[Expectation]) -> list[str]:
    """A note for a run without ``--numeric`` whose ``expect`` asks for numeric agreement."""
    asked = [f"expect.{e.loss}.numeric" for e in expect if e.numeric]
    if not asked:
        return []
    return [f"{', '.join(asked)} {'is' if len(asked) == 1 else 'are'} held only with --numeric"]


def describe(result: m.NumericResult) -> str:
    """``largest relative error 0.5 (tolerance 1e-05; 16 of 64 coordinates, float64)``."""
    c = result.check
    error = "inf" if c.max_rel_error is None else f"{c.max_rel_error:.2g}"
    sampled = (
        f"{c.coordinates} of {c.size} coordinates"
        if c.coordinates < c.size
        else (f"all {c.size} coordinate{'s' if c.size != 1 else ''}")
    )
    return f"largest relative error {error} (tolerance {c.tolerance:.0e}; {sampled}, {c.dtype})"
