"""Every report asks here: pairs, sources and problems get the fix ``decide`` gives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from gradscope._src.analysis.fixes.decide import fix_for
from gradscope._src.analysis.fixes.edit import with_edit
from gradscope._src.results import causes, words
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.causes import Cause, Context
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import ProblemKind, decide


def _with(cause: Cause | None, more: Sequence[Cause]) -> Cause | None:
    """A pair's cause, with its loss's own causes said after it (a loss that converts a
    tensor to NumPy: its pairs' fix, when they have none of their own)."""
    for said in more:
        cause = said if cause is None else cause.then(said)
    return cause


def fixed_losses(
    losses: Sequence[m.LossResult],
    spec: bool = False,
    multipliers: Mapping[str, Sequence[float]] | None = None,
) -> list[m.LossResult]:
    """The losses of an ``inspect`` report with a fix on every pair that needs one; a
    variable another loss reaches is named so (``var-list``, seed 000's multi-task heads)."""
    out = []
    for loss in losses:
        pairs = []
        reads = tuple(p.variable for p in loss.pairs if p.status.has_gradient)
        target = f"loss `{loss.name}`"
        for pair in loss.pairs:
            reached = tuple(
                f"loss `{other.name}`"
                for other in losses
                if other is not loss and _flows(other, pair.variable)
            )
            c = Context(str(pair.status), pair.variable, pair.cut_points, target, loss.source,
                        "", reached, pair.nan_origin, spec, reads=reads,
                        cause=_with(pair.cause, loss.causes))  # fmt: skip
            pairs.append(replace(pair, fix=fix_for(c)))
        given = (multipliers or {}).get(loss.name)
        c = Context("ok", target=target, site=loss.source)
        said = causes.GradientMultiplier(values=tuple(given)).fix(c) if given else None
        own = (cause.fix(c) for cause in loss.causes if cause.fixes)
        out.append(replace(loss, pairs=tuple(pairs), fix=said or next(own, None)))
    return out


def fixed_problems(
    problems: Sequence[m.Problem], losses: Sequence[m.LossResult], spec: bool = False
) -> list[m.Problem]:
    """``problems`` with a fix each: a pair's problem takes the pair's fix."""
    return [
        p if p.fix is not None else replace(p, fix=_problem_fix(p, losses, spec)) for p in problems
    ]


#: The cause of each kind of problem that is not a pair's.
_PROBLEM_CAUSES: dict[str, type[Cause]] = {
    ProblemKind.REPLICA_LOSS_SCALE: causes.ReplicaLossScale,
    ProblemKind.REPLICA_MISMATCH: causes.ReplicasDisagree,
    ProblemKind.REPLICA_GRADIENT_DIFFERS: causes.ReplicasDisagree,
    ProblemKind.REPLICA_VARIABLES_DIFFER: causes.ReplicasDisagree,
    ProblemKind.UNEXPECTED_CONNECTED: causes.UnexpectedGradient,
    ProblemKind.NUMERIC_DIFFERS: causes.NumericDiffers,
}


def _problem_fix(p: m.Problem, losses: Sequence[m.LossResult], spec: bool) -> Fix | None:
    where = f"{p.spec}:{p.line}" if p.spec else ""
    target = f"loss `{p.loss}`" if p.loss else "the loss"
    made = _PROBLEM_CAUSES.get(p.kind)
    if made is not None:
        return made().fix(Context("ok", p.variable or "", target=target, site=where))
    pair = _pair(losses, p.loss, p.variable)
    if p.kind == ProblemKind.NEVER_TRAINED:
        if isinstance(p.cause, causes.NotFloating):
            c = Context("frozen", p.variable or "", site=where)
            return with_edit(p.cause.fix(c), p.cause, c)
        cause = next((c for c in (_cause(r, p.variable) for r in losses) if c), None)
        # no loss gives it a gradient: the status the one rule gives such a pair
        status = decide(has_gradient=False, reachable=bool(p.cut_points), cut_points=p.cut_points)
        c = Context(str(status), p.variable or "", p.cut_points, "every loss", where, spec=spec,
                    cause=cause)  # fmt: skip
        return fix_for(c)
    if pair is not None and pair.status == m.ZERO and pair.fix is None:
        return causes.ZeroGradient().fix(Context(str(pair.status), pair.variable, site=where))
    return pair.fix if pair is not None else None


def _pair(
    losses: Sequence[m.LossResult], loss: str | None, variable: str | None
) -> m.PairResult | None:
    for result in losses:
        if result.name == loss and variable is not None:
            try:
                return result.pair(variable)
            except KeyError:
                return None
    return None


def _cause(loss: m.LossResult, variable: str | None) -> Cause | None:
    """Why no path joins ``variable`` to ``loss``, when the front-end knows."""
    try:
        return loss.pair(variable).cause if variable is not None else None
    except KeyError:
        return None


def _flows(loss: m.LossResult, variable: str) -> bool:
    try:
        return loss.pair(variable).status.has_gradient
    except KeyError:
        return False


def fixed_calls(calls: Sequence[rr.CallResult]) -> list[rr.CallResult]:
    """The calls of a ``gradscope run`` report with a fix on every source that needs one; a
    variable another call site trains is named so (``var-list``)."""
    trained: dict[str, list[str]] = {}
    for call in calls:
        for s in call.sources:
            if s.status.has_gradient:
                trained.setdefault(s.name, []).append(f"{call.api} at {call.site}")
    out = []
    for call in calls:
        target = words.loss_made_at(call.target_source)
        said = (
            causes.GradientMultiplier(values=call.multiplier).fix(
                Context("ok", target=target, site=call.site))
            if call.multiplier else None
        )  # fmt: skip
        sources = []
        reads = tuple(s.name for s in call.sources if s.status.has_gradient)
        for s in call.sources:
            here = f"{call.api} at {call.site}"
            reached = tuple(w for w in dict.fromkeys(trained.get(s.name, ())) if w != here)
            c = Context(str(s.status), s.name, s.cut_points, target, call.site, call.api,
                        reached, s.nan_origin, reads=reads, copy_of=s.copy_of,
                        cause=s.cause)  # fmt: skip
            fix = fix_for(c)
            if fix is None and s.status in ("ok", "zero") and said is not None:
                fix = said  # what the output_gradients did to it
            sources.append(replace(s, fix=fix))
        out.append(replace(call, sources=tuple(sources)))
    return out


def fixed_run_problems(
    problems: Sequence[rr.RunProblem], calls: Sequence[rr.CallResult]
) -> list[rr.RunProblem]:
    """``problems`` of a run with a fix each: the fix of the source at the problem's call."""
    fixes = {(c.site, c.step, s.name): s.fix for c in calls for s in c.sources}
    out = []
    for p in problems:
        fix = fixes.get((p.site, p.step or 0, p.variable or ""))
        if p.kind == ProblemKind.REPLICA_MISMATCH:
            fix = causes.ReplicasDisagree().fix(Context("ok", p.variable or "", site=p.site))
        if p.kind == ProblemKind.NEVER_TRAINED and isinstance(p.cause, causes.LeftOut):
            fix = p.cause.fix(Context("excluded", p.variable or "", site=p.site))
        held = {n: a for c in calls if c.site == p.site for n, a in c.unasked}
        if fix is None and p.kind == ProblemKind.NEVER_TRAINED and p.variable in held:
            untracked = causes.Untracked(names=(p.variable, held[p.variable]), line=p.site)
            fix = untracked.fix(Context("excluded", p.variable, site=p.site))
        out.append(replace(p, fix=fix))
    return out
