"""Many ``gradscope`` (or ``python``) processes without paying Python's start-up and imports
each time.

A driver process imports gradscope's command line (and, when asked, TensorFlow) once, then
forks one child per job: the child is a fresh process running ``gradscope ARGS`` in its own
working directory and environment, with its standard output and error in files, as
``python -m gradscope ARGS`` would (a :func:`programs` driver imports TensorFlow alone, and
its child runs ``python SCRIPT ARGS``: the bare-TensorFlow reference a test compares with);
the driver measures it with ``os.wait4`` (wall time, peak memory) and kills it at a time
limit. What a child does cannot reach the driver or another child, so a crash, a hang or a
memory bomb is seen exactly as in a separate process.

Linux counts a forked child's peak memory from its parent's: the driver stays small
(gradscope's command line, or that and TensorFlow), and a test compares children of the same
driver (an attack against a tiny valid spec), never a child against a separate process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_DRIVER = r"""
import json, os, resource, signal, sys, threading, time

IMPORTS = sys.argv[1]  # "python", "cli" or "tensorflow": what it imported (KIND: a job's)
if IMPORTS == "python":
    import tensorflow  # what each program imports first, as its ``python`` would
else:  # a process of gradscope's own, as ``gradscope ARGS`` makes it (main() without args)
    from gradscope._src.engine.tf_import import import_tensorflow, own_process
    own_process()
    if IMPORTS == "tensorflow":
        import_tensorflow()  # as gradscope run imports it: quietly, then frozen
    import gradscope._src.cli

def entries(value):  # PYTHONPATH's folders as a fresh interpreter puts them on sys.path
    return [os.path.abspath(p) for p in value.split(os.pathsep) if p]

OWN = entries(os.environ.get("PYTHONPATH", ""))  # the driver's, after sys.path[0]

def become(args, cwd, env, out, err, fsize):
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    # the child's PYTHONPATH where a fresh interpreter has it (the driver's own taken out): a
    # folder that shadows nothing the driver imported (conftest.Drivers keys by the others)
    rest = sys.path[1 + len(OWN):] if sys.path[1:1 + len(OWN)] == OWN else sys.path[1:]
    added = list(dict.fromkeys(entries(env.get("PYTHONPATH", ""))))
    sys.path[1:] = [*added, *(p for p in rest if p not in added)]
    if fsize is not None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        # Python writes a module's bytecode with one unchecked write: cut short by the limit,
        # it would leave a truncated .pyc that breaks every later import of that module
        sys.dont_write_bytecode = True
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if KIND == "process":
        os.setsid()  # its own group, as start_new_session: killed whole at the time limit

def kill(pid, kind):
    try:
        os.killpg(pid, signal.SIGKILL) if kind == "process" else os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:  # (not yet its own group, or gone)
        os.kill(pid, signal.SIGKILL)

def cli(args):
    code = 3
    try:
        gradscope._src.cli.main(args=args, prog_name="gradscope")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

for line in sys.stdin:
    KIND, args, cwd, env, out, err, kill_after, fsize = json.loads(line)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        become(args, cwd, env, out, err, fsize)
        if KIND not in ("python", "process"):
            cli(args)
        break  # the child leaves the loop: below, it is ``python ARGS`` (``gradscope ARGS``)
    print(json.dumps(pid), flush=True)
    killer = threading.Timer(kill_after, kill, (pid, KIND))
    killer.start()
    _, status, usage = os.wait4(pid, 0)
    killer.cancel()
    seconds = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime  # its own and its reaped children's
    print(json.dumps([os.waitstatus_to_exitcode(status), seconds, usage.ru_maxrss, cpu]),
          flush=True)
else:
    sys.exit(0)  # no more jobs: the driver ends

if KIND == "process":
    # ``python -m gradscope ARGS...``: its ``sys.argv`` and ``sys.path[0]`` (the working
    # directory), then what ``gradscope/__main__.py`` runs (main() reads the arguments from
    # ``sys.argv``, supervises a Python target, ends lingering threads); its exit, atexit
    # handlers and threads are then the interpreter's own.
    import gradscope
    sys.argv[:] = [os.path.join(os.path.dirname(gradscope.__file__), "__main__.py"), *args]
    sys.path[0] = os.getcwd()
    gradscope._src.cli.main(prog_name="gradscope")
else:
    # ``python SCRIPT ARGS...``: the script as ``__main__``, its folder first on the path; what
    # it raises, how it exits, its threads and atexit handlers are then the interpreter's own.
    import runpy
    sys.argv[:] = args
    sys.path[0] = os.path.dirname(os.path.realpath(args[0]))
    runpy.run_path(os.path.abspath(args[0]), run_name="__main__")
"""


@dataclass(frozen=True)
class Run:
    """One finished ``gradscope`` (or ``python``) process and what it cost."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float
    cpu: float = 0.0  # CPU seconds (user + system), its own children's included


class Driver:
    """A running driver: :meth:`run` forks one ``gradscope`` (or ``python``) process per call."""

    def __init__(self, process: subprocess.Popen[str], kill_after: float, kind: str) -> None:
        self._process = process
        self._kill_after = kill_after
        #: what its children run: "process" (``gradscope ARGS`` as ``python -m gradscope``),
        #: "python" (``python SCRIPT ARGS``), "tensorflow" or "cli" (``main(ARGS)``)
        self.kind = kind
        #: the last finished process's CPU seconds (user + system, its children's included)
        self.cpu = 0.0

    def as_kind(self, kind: str) -> Driver:
        """The same driver (its process, one job at a time), its children running ``kind``:
        "process" and "tensorflow" fork from the same imports (:data:`IMPORTS`)."""
        assert IMPORTS[kind] == IMPORTS[self.kind], (kind, self.kind)
        return Driver(self._process, self._kill_after, kind)

    def start(self, args: list[str], cwd: Path, env: Mapping[str, str], out: Path,
              err: Path, *, fsize: int | None = None,
              kill_after: float | None = None) -> int:  # fmt: skip
        """Fork ``gradscope ARGS`` (a ``programs`` driver: ``python ARGS``) in ``cwd`` with
        ``env``, its standard input empty, its standard output and error written to ``out``
        and ``err`` (a terminal's path makes that stream a terminal), its files at most
        ``fsize`` bytes when given, killed after ``kill_after`` seconds (the driver's limit
        when None); returns its process id. :meth:`finish` waits for it."""
        limit = self._kill_after if kill_after is None else min(kill_after, self._kill_after)
        job = [self.kind, args, str(cwd), dict(env), str(out), str(err), limit, fsize]
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(job) + "\n")
        self._process.stdin.flush()
        return int(self._answer())

    def finish(self) -> tuple[int, float, float]:
        """The started process's exit code, wall seconds and peak memory in MB."""
        code, seconds, peak_kb, self.cpu = self._answer()
        return code, seconds, peak_kb / 1024  # kilobytes on Linux

    def run(self, args: list[str], cwd: Path, env: Mapping[str, str], logs: Path, *,
            fsize: int | None = None, kill_after: float | None = None) -> Run:  # fmt: skip
        """Run ``gradscope ARGS`` (``python ARGS``) in ``cwd`` with ``env``; its output goes
        to ``logs``."""
        logs.mkdir(parents=True, exist_ok=True)
        out, err = logs / "stdout.txt", logs / "stderr.txt"
        self.start(args, cwd, env, out, err, fsize=fsize, kill_after=kill_after)
        code, seconds, peak_mb = self.finish()
        return Run(
            cpu=self.cpu,
            code=code,
            stdout=out.read_text(encoding="utf-8", errors="replace"),
            stderr=err.read_text(encoding="utf-8", errors="replace"),
            seconds=seconds,
            peak_mb=peak_mb,
        )

    def _answer(self) -> Any:
        assert self._process.stdout is not None
        answer = self._process.stdout.readline()
        if not answer:
            raise AssertionError(f"the driver stopped: {self._process.wait()}")
        return json.loads(answer)


@contextmanager
def driver(env: Mapping[str, str], *, tensorflow: bool, kill_after: float) -> Iterator[Driver]:
    """A driver of ``gradscope`` processes with ``env`` (its ``PYTHONPATH`` decides what
    children can import), stopped on every exit path."""
    with started(env, "tensorflow" if tensorflow else "cli", kill_after=kill_after) as running:
        yield running


@contextmanager
def processes(env: Mapping[str, str], *, kill_after: float) -> Iterator[Driver]:
    """A driver of whole ``gradscope ARGS`` processes, as ``python -m gradscope ARGS`` makes
    them (its ``sys.argv`` and ``sys.path``, ``main()`` reading them, the interpreter's own
    exit), forked from one that imported gradscope's command line and TensorFlow as
    ``gradscope run`` does (quietly, with ``env``: its ``PYTHONPATH`` and TensorFlow's variables
    are read at that import), and before anything initialised TensorFlow's devices or eager
    context. Each child is its own session (killed with its group at the time limit). For
    tests whose point is not the process's start: its banners, start-up logs, import costs and
    ``--replicas`` devices need a process of its own."""
    with started(env, "process", kill_after=kill_after) as running:
        yield running


@contextmanager
def programs(env: Mapping[str, str], *, kill_after: float) -> Iterator[Driver]:
    """A driver of ``python SCRIPT ARGS...`` processes for programs that import TensorFlow:
    it imports TensorFlow (as a program does, ``import tensorflow``; with ``env``, whose
    ``TF_CPP_MIN_LOG_LEVEL`` it reads then) once, and each child runs one program as Python
    runs a script: ``sys.argv``, its folder first on ``sys.path``, ``__main__``, and the
    interpreter's own exit (status, ``SystemExit``'s message, atexit, waiting for threads, a
    signal's death). Unlike ``python``: TensorFlow's start-up logs are the driver's, and a
    traceback shows the driver's and ``runpy``'s frames above the program's."""
    with started(env, "python", kill_after=kill_after) as running:
        yield running


#: a job's kind -> what its driver imported first: "python" (``import tensorflow``), "cli"
#: (gradscope's command line) or "tensorflow" (that, and TensorFlow as ``gradscope`` imports it)
IMPORTS = {"python": "python", "cli": "cli", "tensorflow": "tensorflow", "process": "tensorflow"}


@contextmanager
def started(env: Mapping[str, str], kind: str, *, kill_after: float) -> Iterator[Driver]:
    """A driver whose children run ``kind`` (:class:`Driver`), stopped on every exit path."""
    process = subprocess.Popen(
        [sys.executable, "-c", _DRIVER, IMPORTS[kind]],
        cwd=Path(__file__).resolve().parents[1],  # (each child goes to its own)
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield Driver(process, kill_after, kind)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
