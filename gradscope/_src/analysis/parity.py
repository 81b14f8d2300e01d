"""``--mode`` with several modes: the pairs whose status or norm differs between them."""

from __future__ import annotations

import math
from collections.abc import Mapping

from gradscope._src.results import report as m

#: Norms closer than this (relative) agree: XLA fuses and reorders float arithmetic.
RELATIVE = 1e-3


def differences(reports: Mapping[str, m.Report]) -> list[str]:
    """One note per pair whose status or norm differs between the modes' reports.

    Args:
        reports: mode -> the report computed in that mode, the first being the one shown.
    """
    modes = list(reports)
    if len(modes) < 2:
        return []
    first = reports[modes[0]]
    notes = []
    for loss in first.losses:
        for pair in loss.pairs:
            seen = {mode: _pair(reports[mode], loss.name, pair.variable) for mode in modes}
            if _differ([p for p in seen.values() if p is not None]):
                shown = ", ".join(f"{mode} {_said(p)}" for mode, p in seen.items())
                notes.append(
                    f"modes differ: loss {loss.name!r}, variable {pair.variable!r}: {shown}"
                )
    if not notes:
        notes.append(f"modes agree: {', '.join(modes)} give every pair the same status and norm")
    return notes


def _pair(report: m.Report, loss: str, variable: str) -> m.PairResult | None:
    try:
        return report.loss(loss).pair(variable)
    except KeyError:
        return None


def _differ(pairs: list[m.PairResult]) -> bool:
    if len({p.status for p in pairs}) > 1:
        return True
    norms = [p.norm for p in pairs if p.norm is not None]
    if len(norms) < 2:
        return False
    low, high = min(norms), max(norms)
    return not math.isclose(low, high, rel_tol=RELATIVE, abs_tol=1e-12)


def _said(pair: m.PairResult | None) -> str:
    if pair is None:
        return "-"
    return str(pair.status) if pair.norm is None else f"{pair.status} {pair.norm:.6g}"
