"""The one place a fix is decided: ``fix_for`` tries the cases in order (see the package)."""

from __future__ import annotations

from gradscope._src.analysis.fixes import causes, cuts, values
from gradscope._src.analysis.fixes.evidence import Evidence
from gradscope._src.results.fix import Fix


def fix_for(e: Evidence) -> Fix | None:
    """The fix for one pair, source or problem, or None when nothing needs one (``ok``,
    ``zero`` with nothing cut: a zero gradient is a problem only where ``expect`` says so,
    ``frozen``, ``excluded``; a straight-through cut whose gradient flows is ``intended``)."""
    if e.trainable_changed:
        return causes.compile_again(e, causes.COMPILE.search(e.note))
    if e.status in ("ok", "zero") and e.cut_points:
        return cuts.flowing_cut(e)
    if e.status == "nan":
        return values.nan_fix(e)
    if not e.status.startswith("none:"):
        return None
    if e.cut_points and e.status != "none:disconnected":  # a disconnected source's cut
        return cuts.cut_fix(e, e.cut_points[0])  # point is where its value left TensorFlow
    for pattern, make in causes.CAUSES:
        found = pattern.search(e.note)
        if found:
            return make(e, found)
    if e.status == "none:disconnected":
        return causes.disconnected(e)
    return causes.unexplained(e)


def finding_fix(
    kind: str, variable: str, site: str, evidence: Evidence | None = None
) -> Fix | None:
    """The fix of a timeline finding (contract section 7): ``none`` and ``nan`` are decided as
    a source's are, from what the records hold; ``dead``, ``vanishing`` and ``exploding`` by
    ``values.trend_fix``."""
    if kind in ("none", "nan"):
        e = evidence or Evidence("none:unexplained", variable)
        status = "nan" if kind == "nan" else e.status
        return fix_for(
            Evidence(
                status,
                variable,
                e.cut_points,
                e.note,
                e.target,
                site,
                e.api,
                e.reached_by,
                e.nan_origin,
            )
        )
    return values.trend_fix(kind, variable, site)
