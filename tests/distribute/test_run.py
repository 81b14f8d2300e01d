"""Specs under ``--strategy mirrored`` (2 logical CPU devices) against bare TensorFlow.

Every golden case and config runs split across 2 replicas. The reference is bare TensorFlow
with no ``tf.distribute`` at all (``tests/reference.py``): each replica's gradient is a
GradientTape over that replica's slice of the inputs, and the all-reduced gradient is their sum
(what Keras' ``apply_gradients`` sums under a strategy). The one-device gradient is the same
tape over the whole batch, and every pair's status must be the one-device status.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.errors import BuildError, UsageError
from gradscope._src.results import report as m
from gradscope._src.results.status import ProblemKind
from tests.test_golden import CASES, ROOT

pytestmark = [pytest.mark.tf, pytest.mark.replicas]

N = 2
#: Specs whose inputs are not a batch: split along the first axis they no longer build.
UNSPLIT = {
    "float64-and-scalar.yaml": "node 'xw' (multiply)",
    "integer-paths.yaml": "node 'picked' (gather): 2 root error(s) found. (0) INVALID_ARGUMENT: "
    "indices = 2 is not in [0, 2)",
    "list-inputs-and-outputs.yaml": "node 'summed' (add_n)",
    "mixed-cuts.yaml": "would make an empty tensor",
    "nondifferentiable-ops.yaml": "node 'ls' (linspace): would make a tensor whose size",
    "seed001-sum-vs-product.yaml": "input 'input' has 1 row(s)",
}


def _label(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.fixture(scope="module")
def runs() -> dict[Path, Any]:
    return {}


def _run(path: Path, cache: dict[Path, Any]) -> Any:
    if path not in cache:
        import gradscope

        try:
            cache[path] = gradscope.inspect(_label(path), strategy="mirrored", replicas=N)
        except (BuildError, UsageError) as exc:
            cache[path] = exc
    return cache[path]


def _bare(spec: Any) -> tuple[dict[str, dict[str, Any]], list[dict[str, dict[str, Any]]]]:
    """Bare TensorFlow: the whole batch's gradients and each replica's (dense numpy; None)."""
    from gradscope._src.engine.tf_import import import_tensorflow
    from tests.reference import gradients

    tf = import_tensorflow()

    def dense(grads: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {loss: {v: None if g is None else tf.convert_to_tensor(g).numpy()
                       for v, g in pairs.items()} for loss, pairs in grads.items()}  # fmt: skip

    return dense(gradients(spec)), [dense(gradients(spec, shard=(r, N))) for r in range(N)]


def _status(grad: Any) -> str:
    if grad is None:
        return "none"
    if not np.all(np.isfinite(grad)):
        return str(m.NAN)
    return str(m.ZERO) if not np.any(grad) else str(m.OK)


def _norm(grad: Any) -> float:
    return float(np.linalg.norm(np.asarray(grad, dtype=np.float64)))


@pytest.mark.parametrize("path,golden", CASES, ids=[c[0].name for c in CASES])
def test_mirrored_agrees_with_one_device_and_bare_tensorflow(
    path: Path, golden: Path, runs: dict[Path, Any]
) -> None:
    from gradscope._src.frontends.yaml import load_spec

    report = _run(path, runs)
    if path.name in UNSPLIT:
        assert isinstance(report, (BuildError, UsageError)), "a spec that cannot be split"
        assert UNSPLIT[path.name] in str(report)
        if isinstance(report, BuildError):
            assert str(report).startswith(_label(path) + ":")
            assert str(report).endswith("split along the first axis)")
        return
    assert isinstance(report, m.Report), str(report)
    whole, shards = _bare(load_spec(_label(path)))
    scaled = {p.loss for p in report.problems if p.kind == ProblemKind.REPLICA_LOSS_SCALE}
    differs = {(p.loss, p.variable) for p in report.problems
               if p.kind == ProblemKind.REPLICA_GRADIENT_DIFFERS}  # fmt: skip
    for loss, pair in report.pairs():
        where = f"{loss.name} x {pair.variable}"
        one = whole[loss.name].get(pair.variable, "not asked")
        assert [r.replica for r in pair.replicas] == list(range(N)), where
        if isinstance(one, str):  # outside vars, or not trainable: every replica says so
            assert {r.status for r in pair.replicas} == {pair.status}, where
            assert pair.status in (m.EXCLUDED, m.FROZEN), where
            continue
        assert _status(one) == ("none" if m.is_none(pair.status) else pair.status), where
        each = [shard[loss.name][pair.variable] for shard in shards]
        for r, grad in zip(pair.replicas, each, strict=True):
            assert _status(grad) == ("none" if m.is_none(r.status) else r.status), where
            if r.status == m.OK:
                assert r.norm == pytest.approx(_norm(grad), rel=1e-4, abs=1e-6), where
        if pair.status not in (m.OK, m.ZERO):
            continue
        reduced = _norm(sum(np.asarray(g, dtype=np.float64) for g in each))
        assert pair.norm == pytest.approx(reduced, rel=1e-4, abs=1e-6), where
        factor = N if loss.name in scaled else 1
        if (loss.name, pair.variable) in differs:
            assert not math.isclose(reduced, factor * _norm(one), rel_tol=1e-3), where
        else:
            assert pair.norm == pytest.approx(factor * _norm(one), rel=1e-4, abs=1e-6), where


def test_replica_mask_is_a_replica_mismatch(runs: dict[Path, Any]) -> None:
    report = _run(ROOT / "tests/cases/replica-mask.yaml", runs)
    pair = report.loss("masked").pair("w")
    assert pair.status == m.OK  # the all-reduced gradient, as on one device
    assert [(r.replica, r.status) for r in pair.replicas] == [(0, m.OK), (1, m.ZERO)]
    (problem,) = [p for p in report.problems if p.kind == ProblemKind.REPLICA_MISMATCH]
    assert (problem.loss, problem.variable) == ("masked", "w")
    assert "replica 0 ok; replica 1 zero" in problem.message
    assert problem.line == 12  # where `w` is written in the spec
    assert not [p for p in report.problems if p.kind != ProblemKind.REPLICA_MISMATCH]


def test_global_batch_scaling_agrees_and_a_plain_mean_is_flagged(runs: dict[Path, Any]) -> None:
    report = _run(ROOT / "configs/global-batch.yaml", runs)
    kinds = {(p.loss, p.kind) for p in report.problems}
    assert kinds == {("per_replica_mean", ProblemKind.REPLICA_LOSS_SCALE)}
    (problem,) = report.problems
    assert "2x the one-device gradient" in problem.message
    assert "tf.nn.compute_average_loss" in problem.message
    good = report.loss("global_batch").pair("dense/w").norm
    plain = report.loss("per_replica_mean").pair("dense/w").norm
    assert plain == pytest.approx(2 * good, rel=1e-5)


def test_replicas_written_apart_are_reported(write_spec: Any) -> None:
    import gradscope

    path = write_spec(
        """
        gradscope: 1
        inputs:
          x: {values: [[1.0, 2.0], [3.0, 5.0]]}
        variables:
          memo: {shape: [2], trainable: false, init: zeros}
          w: {values: [1.0, 1.0]}
        nodes:
          - {name: batch_mean, op: reduce_mean, inputs: [x], attrs: {axis: 0}}
          - {name: keep, op: assign, inputs: {ref: memo, value: batch_mean}}
          - {name: y, op: multiply, inputs: [keep, w]}
          - {name: loss, op: reduce_sum, inputs: [y]}
        losses:
          loss: loss
        """
    )
    report = gradscope.inspect(path, strategy="mirrored", replicas=N)
    assert report.loss("loss").pair("w").status == m.OK
    (problem,) = [p for p in report.problems if p.kind == ProblemKind.REPLICA_VARIABLES_DIFFER]
    assert problem.variable == "memo"
    # bare numbers: replica 0 writes [1, 2], replica 1 writes [3, 5]
    assert "replica 1's copy of `memo` differs from replica 0's by up to 3" in problem.message
    spreads = {s.variable: s for s in report.distributed.spreads}
    assert spreads["memo"].spread == pytest.approx(3.0)
    assert spreads["w"].replicas == ()


def test_distribution_is_reported(runs: dict[Path, Any]) -> None:
    report = _run(ROOT / "configs/multitask.yaml", runs)
    d = report.distributed
    assert (d.distribution.strategy, d.distribution.replicas) == ("mirrored", 2)
    assert d.devices == ("CPU:0", "CPU:1")
    assert dict(d.shards) == {"x": (4, 4), "labels1": (4, 4), "labels2": (4, 4)}
