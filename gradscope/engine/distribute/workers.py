"""``--strategy multiworker``: one local worker process per replica on the loopback interface.

gradscope builds each worker's ``TF_CONFIG`` (a cluster of ``127.0.0.1`` addresses on free
ports, so no other address is ever contacted), starts the workers in a process group of their
own, waits for them with a timeout, and reads the results the chief (worker 0) gathered. The
workers are stopped on every way out: success, a worker's failure, the timeout, Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from gradscope.errors import GradscopeError, UsageError

#: How long the workers may take, in seconds, unless the caller says otherwise.
TIMEOUT = 300.0
#: How long a stopped worker gets to exit before it is killed.
GRACE = 3.0


class WorkerError(GradscopeError):
    """A worker process failed, or the workers did not finish in time."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports nothing listens on at 127.0.0.1 (held open together, so the
    system cannot hand out one twice)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


def tf_config(ports: list[int], index: int) -> str:
    """The ``TF_CONFIG`` of worker ``index`` in a loopback cluster."""
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


def run(request: dict[str, Any], workers: int, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Run ``request`` (what ``worker.main`` reads) on ``workers`` local worker processes and
    return what the chief wrote.

    Raises:
        WorkerError: a worker failed (its last lines of output are quoted) or the timeout
            passed. UsageError, SpecErrors, BuildError: as the chief reported them.
    """
    with tempfile.TemporaryDirectory(prefix="gradscope-workers-") as folder:
        result = os.path.join(folder, "result.json")
        with open(os.path.join(folder, "request.json"), "w", encoding="utf-8") as handle:
            json.dump({**request, "result": result}, handle)
        with _started(folder, workers) as processes:
            _wait(processes, timeout, folder)
        with open(result, encoding="utf-8") as handle:
            answer: dict[str, Any] = json.load(handle)
    if "error" in answer:
        raise _error(answer["error"])
    return answer


@contextlib.contextmanager
def _started(folder: str, workers: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The worker processes, each in a new session (its own process group), stopped on exit."""
    ports = free_ports(workers)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for index in range(workers):
            env = {**os.environ, "TF_CONFIG": tf_config(ports, index),
                   "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
            log = open(os.path.join(folder, f"worker{index}.log"), "wb")  # noqa: SIM115
            with log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "gradscope.engine.distribute.worker",
                     os.path.join(folder, "request.json")],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                    start_new_session=True,
                ))  # fmt: skip
        yield processes
    finally:
        stop(processes)


def _wait(processes: list[subprocess.Popen[bytes]], timeout: float, folder: str) -> None:
    """Until the chief is done (its result is written once every collective has run);
    the other workers are then stopped if they have not exited yet."""
    deadline = time.monotonic() + timeout
    while True:
        codes = [p.poll() for p in processes]
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            raise WorkerError(_failure(folder, failed[0], codes[failed[0]]))
        if codes[0] == 0:
            return
        if time.monotonic() > deadline:
            raise WorkerError(
                f"--strategy multiworker: the {len(processes)} workers did not finish within "
                f"{timeout:g}s; they were stopped"
            )
        time.sleep(0.05)


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """Stop every worker still running (its whole process group): SIGTERM, then SIGKILL."""
    alive = [p for p in processes if p.poll() is None]
    for p in alive:
        _signal(p, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    for p in alive:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(p, signal.SIGKILL)
            p.wait()


def _signal(process: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _failure(folder: str, index: int, code: int | None) -> str:
    path = os.path.join(folder, f"worker{index}.log")
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip() for line in handle if line.strip()]
    tail = "\n  ".join(lines[-8:])
    return f"--strategy multiworker: worker {index} exited with code {code}:\n  {tail}"


def _error(error: dict[str, Any]) -> GradscopeError:
    """The chief's located error, raised again here as the same kind of error."""
    if error["type"] == "UsageError":
        return UsageError(error["message"])
    return WorkerError(error["message"])
