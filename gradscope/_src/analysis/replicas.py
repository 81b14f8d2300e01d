"""What only a distributed run can get wrong (``--strategy``, contract section 8).

- ``replica-mismatch``: replicas disagree on a pair's status (one replica's gradient is
  ``ok``, another's ``zero``, ``nan`` or ``none:*``): each replica's data takes a different
  path, the failure PyTorch DDP reports as unused parameters. The problem names the replicas.
- ``replica-loss-scale``: the all-reduced gradient is ``replicas`` times the one-device
  gradient of the whole batch: each replica averaged its loss over its own share of the batch
  (a plain mean) where ``tf.nn.compute_average_loss`` divides by the global batch. One per loss.
- ``replica-gradient-differs``: the all-reduced gradient is neither the whole batch's nor a
  multiple of it: the loss couples examples across the batch (batch statistics, a reduction
  over the batch axis), so splitting the batch changes the gradient.
- ``replica-variables-differ``: after one step with the all-reduced gradient, replicas' copies
  of a variable differ (they were written per replica, by an ``assign`` of per-replica data).

The all-reduced gradient is what the pair's status and norm show; a ``nan`` is already a
problem of its own and is not compared again.
"""

from __future__ import annotations

from collections.abc import Sequence

from gradscope._src.analysis.policy import located_at
from gradscope._src.location import line_of
from gradscope._src.results import report as m
from gradscope._src.results.facts import RunFacts, VariableFacts
from gradscope._src.results.replicas import DistributedFacts
from gradscope._src.results.status import ProblemKind

#: Relative L2 difference within which two float32 gradients are the same gradient.
RTOL = 1e-4
#: ... and the absolute one, for gradients near zero.
ATOL = 1e-6


def replica_problems(spec: str, losses: Sequence[m.LossResult], facts: RunFacts) -> list[m.Problem]:
    """The problems of a distributed run (module docstring); none without ``--strategy``."""
    run = facts.distributed
    if run is None:
        return []
    variables = {v.name: v for v in facts.variables}
    problems = [
        _mismatch(spec, loss, pair, variables[pair.variable])
        for loss in losses
        for pair in loss.pairs
        if len({r.status for r in pair.replicas}) > 1
    ]
    problems += _agreement_problems(spec, losses, run, variables)
    problems += _spread_problems(spec, run, variables)
    return problems


def _mismatch(spec: str, loss: m.LossResult, pair: m.PairResult,
              variable: VariableFacts) -> m.Problem:  # fmt: skip
    groups: dict[str, list[int]] = {}
    for r in pair.replicas:
        groups.setdefault(str(r.status), []).append(r.replica)
    said = "; ".join(f"{replica_words(ids)} {status}" for status, ids in groups.items())
    message = (
        f"replicas disagree on `{pair.variable}` from `{loss.name}`: {said}. Each replica's "
        "share of the batch takes a different path to the loss (a data-dependent mask or "
        "branch), what PyTorch DDP reports as unused parameters"
    )
    return m.Problem.problem(loss.name, pair.variable, ProblemKind.REPLICA_MISMATCH, message,
                     pair.cut_points, *located_at(variable, spec))  # fmt: skip


def replica_words(ids: Sequence[int]) -> str:
    """``replica 1`` or ``replicas 0, 2``."""
    return ("replica " if len(ids) == 1 else "replicas ") + ", ".join(map(str, ids))


def _same(difference: float | None, norm: float) -> bool:
    return difference is not None and difference * max(norm, 1e-12) <= RTOL * norm + ATOL


def _agreement_problems(spec: str, losses: Sequence[m.LossResult], run: DistributedFacts,
                        variables: dict[str, VariableFacts]) -> list[m.Problem]:  # fmt: skip
    n = run.distribution.replicas
    sources = {loss.name: loss.source for loss in losses}
    scaled: list[str] = []  # losses whose every compared gradient is n times the whole's
    out = []
    for a in run.agreements:
        if a.whole_norm is None or a.error is None or _same(a.error, a.whole_norm):
            continue
        if _same(a.scaled_error, a.whole_norm):
            scaled += [] if a.loss in scaled else [a.loss]
            continue
        message = (
            f"the all-reduced gradient of `{a.variable}` from `{a.loss}` differs from the "
            f"one-device gradient of the whole batch by {a.error:.2%} (relative L2), and is "
            f"no multiple of it: the loss is not a sum over examples (a mean over unevenly "
            "split shares, batch statistics, a reduction across the batch axis)"
        )
        kind = ProblemKind.REPLICA_GRADIENT_DIFFERS
        out.append(m.Problem.problem(a.loss, a.variable, kind, message, (),
                                     *located_at(variables[a.variable], spec)))  # fmt: skip
    for loss in scaled:
        message = (
            f"the all-reduced gradient of `{loss}` is {n}x the one-device gradient of the whole "
            "batch: each replica averages its loss over its own share of the batch (or "
            "computes it whole) and apply_gradients sums the replicas; divide by the global "
            "batch instead (tf.nn.compute_average_loss; a loss of no per-example input, a "
            "weight penalty: tf.nn.scale_regularization_loss)"
        )
        out.append(m.Problem.problem(loss, None, ProblemKind.REPLICA_LOSS_SCALE, message, (), spec,
                             line_of(sources.get(loss, ""))))  # fmt: skip
    return out


def _spread_problems(spec: str, run: DistributedFacts,
                     variables: dict[str, VariableFacts]) -> list[m.Problem]:  # fmt: skip
    out = []
    for s in run.spreads:
        if not s.replicas:
            continue
        copies = "'s copy" if len(s.replicas) == 1 else "' copies"
        differ = "differs" if len(s.replicas) == 1 else "differ"
        message = (
            f"after one step with the all-reduced gradient, {replica_words(s.replicas)}{copies} "
            f"of `{s.variable}` {differ} from replica 0's by up to {s.spread:.3g}: the copies "
            "were written per replica (an assign of per-replica data), so they drift apart"
        )
        kind = ProblemKind.REPLICA_VARIABLES_DIFFER
        out.append(m.Problem.problem(None, s.variable, kind, message, (),
                                     *located_at(variables[s.variable], spec)))  # fmt: skip
    return out
