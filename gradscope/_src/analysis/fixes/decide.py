"""The one place a fix is decided: which cause of the registry a pair's fix comes from."""

from __future__ import annotations

from gradscope._src.analysis.fixes.edit import with_edit
from gradscope._src.results import causes
from gradscope._src.results.causes import Cause, Context
from gradscope._src.results.fix import Fix


def explain(c: Context) -> Cause | None:
    """The cause whose fix a pair (a source, a problem) gets, or None when nothing needs one
    (``ok``, ``zero`` with nothing cut: a zero gradient is a problem only where ``expect``
    says so, ``frozen``, ``excluded``).

    In order: a cause that holds whatever the status (a ``trainable`` flag the traced step
    ignores); a cut on a path while the gradient still flows (a ``stop_gradient`` is then
    intended); where a NaN first appeared; the first cut point of a ``none:*`` pair; the
    cause the front-end found (or one said after it) that has a fix; no path and no cause;
    no cause at all.
    """
    if c.cause is not None and c.cause.first:
        return c.cause
    if c.status in ("ok", "zero") and c.cut_points:
        cut = causes.of_cut(c.cut_points[0])
        return cut if isinstance(cut, causes.StopGradient) else None
    if c.status == "nan":
        return causes.of_nan(c.nan_origin)
    if not c.status.startswith("none:"):
        return None
    if c.cut_points and c.status != "none:disconnected":  # a disconnected source's cut
        return causes.of_cut(c.cut_points[0])  # point is where its value left TensorFlow
    said = [c.cause, *c.cause.also] if c.cause is not None else []
    found = next((s for s in said if s.fixes and s.fix(c) is not None), None)
    if found is not None:
        return found
    return causes.Disconnected() if c.status == "none:disconnected" else causes.Unexplained()


def fix_for(c: Context) -> Fix | None:
    """The fix for one pair, source or problem (see :func:`explain`)."""
    cause = explain(c)
    return with_edit(cause.fix(c), cause, c) if cause is not None else None


def finding_fix(kind: str, variable: str, site: str, context: Context | None = None) -> Fix | None:
    """The fix of a timeline finding (contract section 7): ``none`` and ``nan`` are decided as
    a source's are, from what the records hold; ``dead``, ``vanishing`` and ``exploding`` by
    their trend's cause (the layer and the candidates: a timeline sees norms, not causes)."""
    if kind in ("none", "nan"):
        c = context or Context("none:unexplained", variable)
        status = "nan" if kind == "nan" else c.status
        return fix_for(Context(status, variable, c.cut_points, c.target, site, c.api,
                               c.reached_by, c.nan_origin, cause=c.cause))  # fmt: skip
    found = causes.trend(kind)
    return found.fix(Context(kind, variable, site=site)) if found is not None else None
