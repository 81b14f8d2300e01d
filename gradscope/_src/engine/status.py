"""One status per loss x variable, from what TensorFlow answered (contract section 2)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from gradscope._src.results import report as m
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts, VariableFacts
from gradscope._src.results.replicas import ReplicaResult
from gradscope._src.results.status import Status, cut_kind, decide


def kind_of(kinds: Iterable[str]) -> str | None:
    """The status kind when paths were cut in different ways: the first of stopped, assign,
    nondifferentiable (contract section 2; ``results/status.cut_kind``)."""
    kind = cut_kind(kinds)
    return None if kind is None else str(kind)


def measured(norm: float, largest: float) -> tuple[bool, bool]:
    """Whether a gradient is finite, and whether it is all zero, from its L2 norm and its
    largest absolute element: what tells ``ok``, ``zero`` and ``nan`` apart, for a loss of a
    spec or a Python target and for a watched call alike.

    Returns:
        ``(finite, all_zero)``.
    """
    if largest < 0:  # max |g| of no elements (norms.py): an empty gradient is zero
        largest = 0.0
    finite = math.isfinite(largest) and not math.isnan(norm)
    return finite, finite and largest == 0.0


def status_of(pair: PairFacts, variable: VariableFacts | None = None) -> Status:
    """The status of one pair, as the one rule (``results/status.decide``, contract section
    2) gives it from the pair's facts: the report, the NaN-origin pass, the numeric check,
    the eager pass and the watched calls all ask it. Without ``variable`` a pair the loss does
    not differentiate is ``excluded`` (whether it is ``frozen`` needs the variable)."""
    return decide(
        has_gradient=pair.has_gradient,
        finite=pair.finite,
        all_zero=pair.all_zero,
        measured=pair.measured,
        requested=pair.requested,
        trainable=None if variable is None else variable.trainable,
        reachable=pair.reachable,
        cut_points=pair.cut_points,
    )


def loss_result(loss: LossFacts, variables: dict[str, VariableFacts], source: str) -> m.LossResult:
    pairs = []
    for pair in loss.pairs:
        variable = variables[pair.variable]
        status = status_of(pair, variable)
        cuts = pair.cut_points if status not in (m.EXCLUDED, m.FROZEN) else ()
        pairs.append(
            m.PairResult(
                variable=pair.variable,
                status=status,
                norm=pair.norm if m.has_gradient(status) else None,
                shape=variable.shape,
                sparse=pair.sparse,
                cut_points=cuts,
                nan_origin=pair.nan_origin if status == m.NAN else None,
                cause=pair.cause if status == m.DISCONNECTED else None,
            )
        )
    return m.LossResult(loss.name, loss.value, tuple(pairs), source, loss.notes,
                        causes=loss.causes)  # fmt: skip


def classify(run: RunFacts, loss_sources: dict[str, str] | None = None) -> list[m.LossResult]:
    """Every loss of a run, with a status per pair."""
    variables = {v.name: v for v in run.variables}
    sources = loss_sources or {}
    return [loss_result(loss, variables, sources.get(loss.name, "")) for loss in run.losses]


def pairs_with(facts: RunFacts, status: Status) -> dict[str, list[str]]:
    """Per loss, the variables whose pair has ``status`` (the second passes' worklists: every
    ``nan`` pair for NaN origins, every ``ok`` pair for ``--numeric``)."""
    out = {}
    for loss in facts.losses:
        names = [p.variable for p in loss.pairs if status_of(p) == status]
        if names:
            out[loss.name] = names
    return out


def with_replicas(losses: Sequence[m.LossResult], facts: RunFacts) -> list[m.LossResult]:
    """Every pair with each replica's status and norm (decided as the pair's own status is,
    by ``status_of``); unchanged without ``--strategy``."""
    if facts.distributed is None:
        return list(losses)
    variables = {v.name: v for v in facts.variables}
    out = []
    for loss in losses:
        raw = facts.loss(loss.name)
        pairs = tuple(
            dataclasses.replace(p, replicas=_replicas(raw.pair(p.variable), variables))
            for p in loss.pairs
        )
        out.append(dataclasses.replace(loss, pairs=pairs))
    return out


def _replicas(pair: PairFacts, variables: dict[str, VariableFacts]) -> tuple[ReplicaResult, ...]:
    out = []
    for r in pair.replicas:
        alone = dataclasses.replace(pair, has_gradient=r.has_gradient, norm=r.norm,
                                    finite=r.finite, all_zero=r.all_zero)  # fmt: skip
        status = status_of(alone, variables[pair.variable])
        out.append(ReplicaResult(r.replica, status, r.norm if m.has_gradient(status) else None))
    return tuple(out)
