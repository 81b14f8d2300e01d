"""Every report asks here: pairs, sources and problems get the fix ``decide`` gives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from gradscope._src.analysis.fixes import causes
from gradscope._src.analysis.fixes.decide import fix_for
from gradscope._src.analysis.fixes.evidence import Evidence
from gradscope._src.analysis.fixes.values import multiplier, per_replica_mean
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results import words
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import ProblemKind


def fixed_losses(
    losses: Sequence[m.LossResult],
    spec: bool = False,
    multipliers: Mapping[str, Sequence[float]] | None = None,
) -> list[m.LossResult]:
    """The losses of an ``inspect`` report with a fix on every pair that needs one; a
    variable another loss reaches is named so (``var-list``, seed 000's multi-task heads)."""
    out = []
    for loss in losses:
        note = " ".join(loss.notes)
        pairs = []
        reads = tuple(p.variable for p in loss.pairs if p.status.has_gradient)
        for pair in loss.pairs:
            reached = tuple(
                f"loss `{other.name}`"
                for other in losses
                if other is not loss and _flows(other, pair.variable)
            )
            e = Evidence(
                str(pair.status),
                pair.variable,
                pair.cut_points,
                f"{pair.cause} {note}" if pair.cause else note,
                f"loss `{loss.name}`",
                loss.source,
                "",
                reached,
                pair.nan_origin,
                spec,
                reads=reads,
            )
            pairs.append(replace(pair, fix=fix_for(e)))
        given = (multipliers or {}).get(loss.name)
        said = multiplier(f"loss `{loss.name}`", loss.source, given) if given else None
        said = said or causes.loss_fix(note, loss.source)
        out.append(replace(loss, pairs=tuple(pairs), fix=said))
    return out


def fixed_problems(
    problems: Sequence[m.Problem], losses: Sequence[m.LossResult], spec: bool = False
) -> list[m.Problem]:
    """``problems`` with a fix each: a pair's problem takes the pair's fix."""
    return [
        p if p.fix is not None else replace(p, fix=_problem_fix(p, losses, spec)) for p in problems
    ]


def _problem_fix(p: m.Problem, losses: Sequence[m.LossResult], spec: bool) -> Fix | None:
    where = f"{p.spec}:{p.line}" if p.spec else ""
    pair = _pair(losses, p.loss, p.variable)
    if p.kind == ProblemKind.REPLICA_LOSS_SCALE:
        return per_replica_mean(f"loss `{p.loss}`" if p.loss else "the loss", where)
    if p.kind in (
        ProblemKind.REPLICA_MISMATCH,
        ProblemKind.REPLICA_GRADIENT_DIFFERS,
        ProblemKind.REPLICA_VARIABLES_DIFFER,
    ):
        return Fix(
            "replica-candidates",
            where,
            "The replicas disagree; the evidence does not single out why.",
            (
                "a data-dependent mask or branch: make every replica take the same ops",
                "a loss averaged per replica: `tf.nn.compute_average_loss`",
                "a variable updated outside the strategy's `apply_gradients`",
            ),
        )
    if p.kind == ProblemKind.UNEXPECTED_CONNECTED:
        return Fix(
            "expectation",
            where,
            f"`{p.variable}` gets a gradient that expect.{p.loss}.none rules out: if it "
            "must not learn from this loss, cut its path where it enters "
            "(`stop_gradient`) or leave it out of the loss's variables; if it may, drop "
            "the pattern from `expect`.",
        )
    if p.kind == ProblemKind.NUMERIC_DIFFERS:
        return Fix(
            "numeric-candidates",
            where,
            f"The gradient of `{p.variable}` is not the derivative of the loss; the "
            "evidence does not single out why.",
            (
                "a `tf.custom_gradient` whose `grad_fn` computes another derivative",
                "a straight-through estimator, meant: list it under expect.<loss>.numeric",
                "float32 round-off: run with --numeric in float64",
            ),
        )
    if p.kind == ProblemKind.NEVER_TRAINED:
        if "not floating-point" in p.message:
            return Fix(
                "not-floating",
                where,
                f"`{p.variable}` holds integers, which get no gradient: declare it "
                "not trainable (`trainable: false`, `trainable=False`).",
            )
        cause = next((c for c in (_cause(r, p.variable) for r in losses) if c), "")
        e = Evidence(
            "none:disconnected" if not p.cut_points else "none:stopped",
            p.variable or "",
            p.cut_points,
            cause,
            "every loss",
            where,
            spec=spec,
        )
        return fix_for(e)
    if pair is not None and pair.status == m.ZERO and pair.fix is None:
        return causes.zero(Evidence(str(pair.status), pair.variable, site=where))
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


def _cause(loss: m.LossResult, variable: str | None) -> str:
    """Why no path joins ``variable`` to ``loss``, when the front-end knows."""
    try:
        return loss.pair(variable).cause if variable is not None else ""
    except KeyError:
        return ""


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
        said = multiplier(target, call.site, call.multiplier) if call.multiplier else None
        sources = []
        reads = tuple(s.name for s in call.sources if s.status.has_gradient)
        for s in call.sources:
            here = f"{call.api} at {call.site}"
            reached = tuple(w for w in dict.fromkeys(trained.get(s.name, ())) if w != here)
            e = Evidence(
                str(s.status),
                s.name,
                s.cut_points,
                s.note,
                target,
                call.site,
                call.api,
                reached,
                reads=reads,
                trainable_changed=s.trainable_changed,
                nan_origin=s.nan_origin,
                copy_of=s.copy_of,
            )
            fix = fix_for(e)
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
        fix = fixes.get((p.site, p.step, p.variable))
        if p.kind == ProblemKind.REPLICA_MISMATCH:
            fix = _problem_fix(m.Problem(None, p.variable, p.kind, p.message), (), False)
            fix = replace(fix, where=p.site) if fix is not None else None
        held = {n: a for c in calls if c.site == p.site for n, a in c.unasked}
        if fix is None and p.kind == ProblemKind.NEVER_TRAINED and p.variable in held:
            fix = causes.untracked(p.variable, held[p.variable], p.site)
        out.append(replace(p, fix=fix))
    return out
