"""``--strategy multiworker``: one local worker process per replica on the loopback interface.

gradscope starts a launcher (``cluster.py``) in a process group of its own; the launcher picks
free ports on 127.0.0.1, builds each worker's ``TF_CONFIG`` (a cluster of ``127.0.0.1``
addresses, so no other address is ever contacted) and starts the workers in the same group.
TensorFlow's gRPC server listens on every interface and offers no way to choose one, so where
the system lets an unprivileged user make a network namespace (``unshare --user --net``), the
launcher runs in one that holds only a loopback interface: the workers are then unreachable
from outside the machine's loopback. The whole group is stopped on every way out: success, a
worker's failure, the timeout, Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from gradscope._src.errors import GradscopeError, UsageError

#: How long the workers may take, in seconds, unless the caller says otherwise.
TIMEOUT = 300.0
#: How long a stopped process group gets to exit before it is killed.
GRACE = 3.0


class WorkerError(GradscopeError):
    """A worker process failed, or the workers did not finish in time."""


@functools.cache
def isolating() -> list[str]:
    """The command prefix that runs the launcher in a private network namespace with only a
    loopback interface, or ``[]`` where the system does not allow it."""
    unshare = shutil.which("unshare")
    if unshare is None or not sys.platform.startswith("linux"):
        return []
    prefix = [unshare, "--user", "--map-root-user", "--net", "--"]
    try:
        done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return prefix if done.returncode == 0 else []


def run(job: dict[str, Any], workers: int, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Run one job (``{"spec", "max_elements", "losses"}``) on ``workers`` local worker
    processes and return the measurement the chief gathered.

    Raises:
        WorkerError: a worker failed (its last lines of output are quoted) or the timeout
            passed. UsageError: as the workers reported it.
    """
    (answer,) = run_all([job], workers, timeout)
    if "error" in answer:
        raise _error(answer["error"])
    return answer


def run_target(target: str, before: list[tuple[str, Any]], losses: list[str] | None,
               workers: int, timeout: float = TIMEOUT) -> dict[str, Any]:  # fmt: skip
    """Run a Python target (``module:function`` or ``file.py:function``) on ``workers``
    local worker processes, from the one-device run's variables ``before`` (``(name,
    value)``, handed over in a ``.npz`` file); the measurement, with its ``notes``.

    Raises:
        WorkerError: a worker failed (a target error included) or the timeout passed.
    """
    import numpy as np

    with tempfile.TemporaryDirectory(prefix="gradscope-values-") as folder:
        values = os.path.join(folder, "values.npz")
        np.savez(values, *[value for _, value in before])
        job = {"target": target, "names": [name for name, _ in before], "values": values,
               "losses": losses}  # fmt: skip
        return run(job, workers, timeout)


def run_all(jobs: list[dict[str, Any]], workers: int,
            timeout: float = TIMEOUT) -> list[dict[str, Any]]:  # fmt: skip
    """Run several jobs in order on one start of the workers; each answer is a measurement
    or ``{"error": {"type", "message"}}``.

    Raises:
        WorkerError: a worker failed or the timeout passed.
    """
    with tempfile.TemporaryDirectory(prefix="gradscope-workers-") as folder:
        result = os.path.join(folder, "result.json")
        with open(os.path.join(folder, "request.json"), "w", encoding="utf-8") as handle:
            json.dump({"jobs": jobs, "result": result, "workers": workers}, handle)
        with _launched(folder) as launcher:
            _wait(launcher, timeout, workers)
        if launcher.returncode != 0 or not os.path.exists(result):
            raise WorkerError(_failure(folder, launcher.returncode))
        with open(result, encoding="utf-8") as handle:
            answers: list[dict[str, Any]] = json.load(handle)["answers"]
    return answers


@contextlib.contextmanager
def _launched(folder: str) -> Iterator[subprocess.Popen[bytes]]:
    """The launcher, in a new session (its own process group, which its workers join),
    and the whole group stopped on the way out."""
    command = [*isolating(), sys.executable, "-m", "gradscope._src.distribute.cluster", folder]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}
    with open(os.path.join(folder, "launcher.log"), "wb") as log:
        launcher = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield launcher
    finally:
        stop(launcher)


def _wait(launcher: subprocess.Popen[bytes], timeout: float, workers: int) -> None:
    try:
        launcher.wait(timeout)
    except subprocess.TimeoutExpired:
        raise WorkerError(
            f"--strategy multiworker: the {workers} workers did not finish within "
            f"{timeout:g}s; they were stopped"
        ) from None


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop ``process``'s whole process group (it and every worker): SIGTERM, then SIGKILL."""
    signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and group_alive(process.pid):
        process.poll()  # reap the launcher itself once it exits
        time.sleep(0.05)
    signal_group(process.pid, signal.SIGKILL)
    process.wait()


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` still runs (signal 0 probes without signalling)."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _failure(folder: str, code: int | None) -> str:
    """What went wrong, from the launcher's note naming the worker and that worker's log."""
    note = os.path.join(folder, "failure.json")
    if os.path.exists(note):
        with open(note, encoding="utf-8") as handle:
            failed = json.load(handle)
        log, what = os.path.join(folder, f"worker{failed['worker']}.log"), (
            f"worker {failed['worker']} exited with code {failed['code']}")  # fmt: skip
    else:
        log, what = os.path.join(folder, "launcher.log"), f"the launcher exited with code {code}"
    with open(log, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip() for line in handle if line.strip()]
    tail = "".join(f"\n  {line}" for line in lines[-8:])
    return f"--strategy multiworker: {what}{':' if tail else ''}{tail}"


def _error(error: dict[str, Any]) -> GradscopeError:
    """The error the workers met, raised again here (a located spec error keeps its text)."""
    if error["type"] == "UsageError":
        return UsageError(error["message"])
    return WorkerError(error["message"])
