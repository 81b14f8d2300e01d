"""The distributed problems (``analysis/replicas.py``), from plain facts: no TensorFlow."""

from __future__ import annotations

from gradscope._src.analysis.replicas import replica_problems
from gradscope._src.engine.status import classify, with_replicas
from gradscope._src.results import report as m
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts, VariableFacts
from gradscope._src.results.replicas import (
    Agreement,
    DistributedFacts,
    Distribution,
    ReplicaFacts,
    StepSpread,
)
from gradscope._src.results.status import ProblemKind

W = VariableFacts("w", (2,), "float32", True, "s.yaml:7")
B = VariableFacts("b", (), "float32", True, "s.yaml:8")


def _replica(r: int, norm: float | None) -> ReplicaFacts:
    return ReplicaFacts(r, norm is not None, norm, True, norm == 0.0)


def _run(agreements: tuple[Agreement, ...] = (), spreads: tuple[StepSpread, ...] = (),
         w_norms: tuple[float | None, ...] = (1.0, 0.0)) -> RunFacts:  # fmt: skip
    w = PairFacts("w", True, True, True, norm=1.0,
                  replicas=tuple(_replica(r, n) for r, n in enumerate(w_norms)))  # fmt: skip
    b = PairFacts("b", True, True, True, norm=2.0, replicas=(_replica(0, 1.0), _replica(1, 1.0)))
    distributed = DistributedFacts(Distribution("mirrored", 2), ("CPU:0", "CPU:1"),
                                   agreements, spreads)  # fmt: skip
    return RunFacts("s.yaml", "2.21.0", "CPU:0", (W, B),
                    (LossFacts("loss", 1.0, (), (w, b)),), distributed=distributed)  # fmt: skip


def _problems(facts: RunFacts) -> list[m.Problem]:
    losses = with_replicas(classify(facts, {"loss": "s.yaml:12"}), facts)
    return replica_problems("s.yaml", losses, facts)


def test_replica_statuses_come_from_each_replicas_gradient() -> None:
    facts = _run()
    (loss,) = with_replicas(classify(facts), facts)
    w = loss.pair("w")
    assert w.status == m.OK
    assert [(r.replica, r.status, r.norm) for r in w.replicas] == [(0, m.OK, 1.0),
                                                                   (1, m.ZERO, 0.0)]  # fmt: skip


def test_replicas_that_disagree_are_a_mismatch_naming_them() -> None:
    (problem,) = _problems(_run())
    assert problem.kind == ProblemKind.REPLICA_MISMATCH
    assert (problem.loss, problem.variable, problem.line) == ("loss", "w", 7)
    assert "replica 0 ok; replica 1 zero" in problem.message
    none = _problems(_run(w_norms=(1.0, None)))[0]
    assert "replica 0 ok; replica 1 none:unexplained" in none.message


def test_a_gradient_n_times_the_whole_batch_is_one_loss_scale_problem_per_loss() -> None:
    scaled = (Agreement("loss", "w", 0.5, 1.0, 1e-8), Agreement("loss", "b", 1.0, 1.0, 0.0))
    problems = _problems(_run(scaled, w_norms=(1.0, 1.0)))
    assert [(p.kind, p.loss, p.variable, p.line) for p in problems] == [
        (ProblemKind.REPLICA_LOSS_SCALE, "loss", None, 12)
    ]
    assert "2x the one-device gradient" in problems[0].message


def test_a_gradient_that_is_no_multiple_differs() -> None:
    odd = (Agreement("loss", "w", 1.0, 0.3, 0.9), Agreement("loss", "b", 1.0, 1e-7, 1.0))
    problems = _problems(_run(odd, w_norms=(1.0, 1.0)))
    assert [(p.kind, p.variable) for p in problems] == [(ProblemKind.REPLICA_GRADIENT_DIFFERS, "w")]
    assert "by 30.00%" in problems[0].message


def test_copies_written_apart_are_reported_with_the_replicas() -> None:
    spreads = (StepSpread("b", 0.25, (1,)), StepSpread("w", 0.0, ()))
    problems = _problems(_run(spreads=spreads, w_norms=(1.0, 1.0)))
    assert [(p.kind, p.variable, p.line) for p in problems] == [
        (ProblemKind.REPLICA_VARIABLES_DIFFER, "b", 8)
    ]
    assert "replica 1's copy of `b` differs from replica 0's by up to 0.25" in problems[0].message


def test_without_a_strategy_nothing_changes() -> None:
    pair = PairFacts("w", True, True, True, norm=1.0)
    facts = RunFacts("s.yaml", "2.21.0", "CPU:0", (W,), (LossFacts("loss", 1.0, (), (pair,)),))
    losses = classify(facts)
    assert with_replicas(losses, facts) == losses
    assert replica_problems("s.yaml", losses, facts) == []
