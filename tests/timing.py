"""What each test costs: ``pytest --record-times=FILE`` writes, per test, its wall seconds and
the CPU seconds (user + system) of the worker and of every process it started (subprocesses,
notebook kernels, the forked drivers' children), setup and teardown included (a module
fixture's cost falls on the first test that asks for it). ``tests/times.json`` is such a
record, summed per file: ``make test`` hands out the costliest files first (conftest.py).

CPU of descendants is read from ``/proc``: at the test's start and end, the sum over this
process's live descendants of their own and their reaped children's CPU, plus what this
process reaped itself. A process that outlives its parent (re-parented to init) is missed.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK")
_START = pytest.StashKey[tuple[float, float, float]]()


def _descendants_cpu() -> float:
    """CPU seconds of this process's live descendants, each with its reaped children's."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        # fields[0] is the state (field 3); ppid is field 4, utime..cstime fields 14-17
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(f) for f in fields[11:15]) / _TICK
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        total += cpu[pid]
        todo.extend(children.get(pid, []))
    return total


def _cpu() -> tuple[float, float]:
    """(this process's CPU, its descendants' CPU: reaped and live) in seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime + _descendants_cpu()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-times",
        metavar="FILE",
        default=None,
        help="write each test's wall and CPU seconds (its processes' too) to FILE as JSON",
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if not item.config.getoption("--record-times"):
        return (yield)
    wall, (own, children) = time.monotonic(), _cpu()
    item.stash[_START] = (wall, own, children)
    return (yield)


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    if call.when != "teardown" or not item.config.getoption("--record-times"):
        return
    if _START not in item.stash:
        return
    wall, own, children = item.stash[_START]
    own_now, children_now = _cpu()
    item.user_properties.append(
        ("times", (time.monotonic() - wall, own_now - own, children_now - children))
    )


class _Recorder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.times: dict[str, dict[str, float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == "times":
                wall, own, children = value
                self.times[report.nodeid] = {
                    "wall": round(wall, 3),
                    "cpu": round(own + children, 3),
                    "children": round(children, 3),
                }
                self._write()  # as it goes: a run stopped early leaves what it measured

    def _write(self) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(self.times, indent=0, sort_keys=True) + "\n")
        partial.replace(self.path)

    def pytest_sessionfinish(self) -> None:
        self._write()


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--record-times")
    # the controller (or a run without xdist) writes the record; xdist's workers measure
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(Path(path)), "gradscope-record-times")


def per_file(record: dict[str, dict[str, float]]) -> dict[str, float]:
    """A :option:`--record-times` record summed per test file: file -> CPU seconds."""
    files: dict[str, float] = {}
    for nodeid, times in record.items():
        name = nodeid.partition("::")[0]
        files[name] = files.get(name, 0.0) + times["cpu"]
    return {name: round(cpu, 1) for name, cpu in sorted(files.items(), key=lambda f: -f[1])}


def main(argv: list[str]) -> int:
    """``python tests/timing.py RECORD [TIMES]``: RECORD (``--record-times``) summed per file
    into TIMES (``tests/times.json``, which ``make test`` orders its files by), with the total
    CPU and an estimate of an idle 2-core run's wall time (half the total, plus the serial
    chain: at least the costliest file); the ten costliest files on standard output."""
    record = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    files = per_file(record)
    total = sum(files.values())
    out = {
        "about": "CPU seconds per test file in a full run (make times); make test runs the "
        "costliest first",
        "total_cpu": round(total, 1),
        "unknown_cpu": max(files.values(), default=0.0),  # a new file: first
        "files": files,
    }
    target = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("times.json")
    target.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{len(record)} tests, {len(files)} files, {total:.0f} s of CPU (idle 2 cores: "
          f"~{total / 2:.0f} s, plus what cannot be shared out: the costliest file has "
          f"{max(files.values(), default=0):.0f})")  # fmt: skip
    for name, cpu in list(files.items())[:10]:
        print(f"{cpu:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
