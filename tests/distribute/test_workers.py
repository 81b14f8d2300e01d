"""``--strategy multiworker``: local worker processes on 127.0.0.1, their results, their end.

The runs are few and module-scoped (each starts two processes that import TensorFlow); the
reference is bare TensorFlow with no ``tf.distribute`` (``tests/reference.py``): a tape per
worker's share of the inputs, and their sum for the all-reduced gradient.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.distribute import workers
from gradscope._src.distribute.merge import from_stats
from gradscope._src.distribute.replica import KEY
from gradscope._src.results import report as m
from gradscope._src.results.status import ProblemKind
from tests.distribute.test_run import UNSPLIT
from tests.test_golden import CASES, ROOT


def _ours() -> list[str]:
    """Command lines of every running launcher or worker process (none may outlive a run)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "gradscope._src.distribute." in line and int(pid) != os.getpid():
            found.append(line)
    return found


@pytest.fixture(scope="module")
def mask() -> m.Report:
    import gradscope

    return gradscope.inspect("tests/cases/replica-mask.yaml", strategy="multiworker", replicas=2)


#: A job whose spec the workers cannot read: its error comes back as that job's answer.
MISSING = "no/such/spec.yaml"


@pytest.fixture(scope="module")
def every_case() -> dict[str, dict[str, Any]]:
    """Every splittable golden case and config, and a missing spec, measured on one start of
    2 workers."""
    paths = [str(p.relative_to(ROOT)) for p, _ in CASES if p.name not in UNSPLIT] + [MISSING]
    jobs = [{"spec": p, "max_elements": 2**26, "losses": None} for p in paths]
    return dict(zip(paths, workers.run_all(jobs, 2), strict=True))


def _bare(path: str, shard: tuple[int, int] | None) -> dict[str, dict[str, Any]]:
    from gradscope._src.engine.tf_import import import_tensorflow
    from gradscope._src.frontends.yaml import load_spec
    from tests.reference import gradients

    tf = import_tensorflow()
    return {
        loss: {v: None if g is None else tf.convert_to_tensor(g).numpy() for v, g in p.items()}
        for loss, p in gradients(load_spec(path), shard=shard).items()
    }


def _status(norm: float, largest: float) -> str:
    """How gradscope reads a gradient's ``[norm, max |g|]`` (``merge.from_stats``)."""
    facts = from_stats(0, norm, largest)
    return "nan" if not facts.finite else "zero" if facts.all_zero else "ok"


def _bare_status(grad: Any) -> str:
    if not np.all(np.isfinite(grad)):
        return "nan"
    return "zero" if not np.any(grad) else "ok"


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
@pytest.mark.parametrize("path", [c[0] for c in CASES], ids=[c[0].name for c in CASES])
def test_multiworker_agrees_with_one_device_and_bare_tensorflow(
    path: Path, every_case: dict[str, dict[str, Any]]
) -> None:
    if path.name in UNSPLIT:  # not a batch: refused under mirrored already (test_run.py)
        return
    label = str(path.relative_to(ROOT))
    measured = every_case[label]
    assert "error" not in measured, measured
    whole = _bare(label, None)
    shards = [_bare(label, (r, 2)) for r in range(2)]
    for loss, grads in whole.items():
        for variable, one in grads.items():
            where = f"{loss} x {variable}"
            entry = measured["pairs"].get(f"{loss}{KEY}{variable}")
            each = [s[loss][variable] for s in shards]
            if entry is None:  # no replica got a gradient: none on one device as well
                assert one is None and all(g is None for g in each), where
                continue
            assert one is not None, where
            for (norm, largest), g in zip(entry["replicas"], each, strict=True):
                assert _status(norm, largest) == _bare_status(g), where
                if _bare_status(g) == "ok":
                    assert norm == pytest.approx(float(np.linalg.norm(g)), rel=1e-4, abs=1e-6)
            assert _status(*entry["reduced"]) == _bare_status(one), where  # one-device status
            if _bare_status(one) == "ok":
                total = float(np.linalg.norm(sum(np.asarray(g, np.float64) for g in each)))
                assert entry["reduced"][0] == pytest.approx(total, rel=1e-4, abs=1e-6), where


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


def test_a_spec_error_in_the_workers_is_reported(
    every_case: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers' own answer to a missing spec (from the shared start) raised by ``run``."""
    answer = every_case[MISSING]
    assert MISSING in answer["error"]["message"]
    monkeypatch.setattr(workers, "run_all", lambda jobs, count, timeout: [answer])
    request = {"spec": MISSING, "max_elements": 2**26, "losses": None}
    with pytest.raises(workers.WorkerError, match=r"no/such/spec\.yaml"):
        workers.run(request, 2, timeout=60)
    assert _ours() == []


def test_a_launch_that_fails_is_quoted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A launcher that dies before any worker starts: its exit code and its own words."""
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: no gradscope here' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(broken))
    request = {"spec": "x.yaml", "max_elements": 2**26, "losses": None}
    with pytest.raises(workers.WorkerError, match="exited with code 1") as raised:
        workers.run(request, 2, timeout=60)
    assert "no gradscope here" in str(raised.value)
    assert _ours() == []
