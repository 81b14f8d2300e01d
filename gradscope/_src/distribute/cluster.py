"""The launcher of ``--strategy multiworker``: ``python -m gradscope._src.distribute.cluster
FOLDER`` starts one worker per replica on 127.0.0.1 and waits for the chief.

It runs in the process group ``workers.run`` made for it (and, where the system allows, in a
network namespace holding only a loopback interface, which it brings up); its workers join that
group, so stopping the group stops them all.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import time

from gradscope._src.distribute.workers import GRACE

_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    """Bring up ``lo`` (a new network namespace starts with it down); a no-op where it is up."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | _IFF_UP))


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


def main(folder: str) -> int:
    """Start the workers, wait until the chief is done or one fails; 0 when the chief is."""
    with open(os.path.join(folder, "request.json"), encoding="utf-8") as handle:
        workers = int(json.load(handle)["workers"])
    with contextlib.suppress(OSError):
        loopback_up()
    ports = free_ports(workers)
    processes = []
    for index in range(workers):
        env = {**os.environ, "TF_CONFIG": tf_config(ports, index)}
        with open(os.path.join(folder, f"worker{index}.log"), "wb") as log:
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "gradscope._src.distribute.worker",
                 os.path.join(folder, "request.json")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            ))  # fmt: skip
    return _watch(processes, folder)


def _watch(processes: list[subprocess.Popen[bytes]], folder: str) -> int:
    """Until the chief (worker 0) exits: its result is written once every collective ran."""
    while True:
        codes = [p.poll() for p in processes]
        failed = [i for i, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            with open(os.path.join(folder, "failure.json"), "w", encoding="utf-8") as handle:
                json.dump({"worker": failed[0], "code": codes[failed[0]]}, handle)
            return 1
        if codes[0] == 0:
            deadline = time.monotonic() + GRACE
            while time.monotonic() < deadline and any(p.poll() is None for p in processes):
                time.sleep(0.05)
            return 0
        time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
