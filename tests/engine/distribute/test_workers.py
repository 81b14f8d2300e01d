"""``--strategy multiworker``: local worker processes on 127.0.0.1, their results, their end.

The runs are few and module-scoped (each starts two processes that import TensorFlow); the
reference is bare TensorFlow with no ``tf.distribute`` (``tests/reference.py``): a tape per
worker's share of the inputs, and their sum for the all-reduced gradient.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope.engine.distribute import workers
from gradscope.results import report as m
from gradscope.results.status import ProblemKind

ROOT = Path(__file__).resolve().parents[3]


def _ours() -> list[str]:
    """Command lines of every running launcher or worker process (none may outlive a run)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "gradscope.engine.distribute." in line and int(pid) != os.getpid():
            found.append(line)
    return found


@pytest.fixture(scope="module")
def mask() -> m.Report:
    import gradscope

    return gradscope.inspect("tests/cases/replica-mask.yaml", strategy="multiworker", replicas=2)


@pytest.fixture(scope="module")
def multitask() -> m.Report:
    import gradscope

    return gradscope.inspect(
        "configs/multitask.yaml", losses=["loss_1"], strategy="multiworker", replicas=2
    )


def _bare(path: str) -> list[dict[str, dict[str, Any]]]:
    from gradscope.engine.tf_import import import_tensorflow
    from gradscope.frontends.yaml import load_spec
    from tests.reference import gradients

    tf = import_tensorflow()
    spec = load_spec(path)
    return [
        {loss: {v: None if g is None else tf.convert_to_tensor(g).numpy() for v, g in p.items()}
         for loss, p in gradients(spec, shard=(r, 2)).items()}
        for r in range(2)
    ]  # fmt: skip


@pytest.mark.tf
def test_multiworker_replica_mask_is_a_mismatch(mask: m.Report) -> None:
    assert mask.distributed is not None
    assert mask.distributed.devices == ("worker 0 CPU:0", "worker 1 CPU:0")
    pair = mask.loss("masked").pair("w")
    assert pair.status == m.OK
    assert [(r.replica, r.status) for r in pair.replicas] == [(0, m.OK), (1, m.ZERO)]
    kinds = [p.kind for p in mask.problems]
    assert kinds == [ProblemKind.REPLICA_MISMATCH]  # divided by the global batch: no scale


@pytest.mark.tf
def test_multiworker_agrees_with_bare_tensorflow(mask: m.Report, multitask: m.Report) -> None:
    for path, report in (("tests/cases/replica-mask.yaml", mask),
                         ("configs/multitask.yaml", multitask)):  # fmt: skip
        shards = _bare(path)
        for loss, pair in report.pairs():
            each = [s[loss.name].get(pair.variable, "excluded") for s in shards]
            if any(isinstance(g, str) or g is None for g in each):
                assert all(r.norm is None for r in pair.replicas), pair.variable
                continue
            for r, g in zip(pair.replicas, each, strict=True):
                assert r.norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-4, abs=1e-6)
            total = float(np.linalg.norm(sum(np.asarray(g, np.float64) for g in each)))
            assert pair.norm == pytest.approx(total, rel=1e-4, abs=1e-6), pair.variable
    assert multitask.loss("loss_1").pair("task2/w").status == m.DISCONNECTED
    (scale,) = [p for p in multitask.problems if p.kind == ProblemKind.REPLICA_LOSS_SCALE]
    assert scale.loss == "loss_1"


@pytest.mark.tf
def test_workers_are_gone_after_a_run(mask: m.Report) -> None:
    assert _ours() == []


def test_workers_stop_at_the_timeout() -> None:
    request = {"spec": "tests/cases/replica-mask.yaml", "max_elements": 2**26, "losses": None}
    start = time.monotonic()
    with pytest.raises(workers.WorkerError, match="did not finish within 1s; they were stopped"):
        workers.run(request, 2, timeout=1.0)
    assert time.monotonic() - start < 1.0 + workers.GRACE + 3.0
    assert _ours() == []


def test_workers_stop_on_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(launcher: Any, timeout: float, count: int) -> None:
        time.sleep(0.5)  # the launcher has started its workers by now
        raise KeyboardInterrupt

    monkeypatch.setattr(workers, "_wait", interrupted)
    request = {"spec": "tests/cases/replica-mask.yaml", "max_elements": 2**26, "losses": None}
    with pytest.raises(KeyboardInterrupt):
        workers.run(request, 2)
    assert _ours() == []


def test_a_spec_error_in_the_workers_is_reported() -> None:
    request = {"spec": "no/such/spec.yaml", "max_elements": 2**26, "losses": None}
    with pytest.raises(workers.WorkerError, match="no/such/spec.yaml"):
        workers.run(request, 2, timeout=60)
    assert _ours() == []


def test_a_launch_that_fails_is_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/nonexistent")  # the workers cannot import gradscope
    monkeypatch.chdir("/")
    request = {"spec": "x.yaml", "max_elements": 2**26, "losses": None}
    with pytest.raises(workers.WorkerError, match="exited with code 1"):
        workers.run(request, 2, timeout=60)
    assert _ours() == []
