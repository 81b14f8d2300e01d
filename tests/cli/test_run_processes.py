"""``gradscope run``: forks, threads, finalizers, exec and signals, each against the same
program under plain ``python`` (exit status, output, files written); and the report and the
timeline delivered however the process ends.

``gradscope run`` is a process of its own each time, forked from one that imported TensorFlow
(``tests/forked.py``: ``processes``), and so is the plain ``python`` reference (``programs``),
except where the start of the process is the point (the environment and TensorFlow's logger).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import Drivers, Processes
from tests.forked import Driver

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
_ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
_TAPE = """\
import os, sys, tensorflow as tf
w = tf.Variable([1.0], name='w'); u = tf.Variable([1.0], name='u')
def grads():
    with tf.GradientTape() as t:
        l = tf.reduce_sum(w * 2.0)
    return t.gradient(l, [w, u])
"""


@contextmanager
def _started(args: list[str], cwd: Path, **kwargs: object) -> Iterator[subprocess.Popen[str]]:
    """A process, killed (with its group) on every way out of the block."""
    kwargs.setdefault("env", _ENV)
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            **kwargs)  # type: ignore[call-overload]  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)


@pytest.fixture
def reference(drivers: Drivers) -> Driver:
    """``python SCRIPT``, the reference, forked from one process that imported TensorFlow."""
    return drivers.programs(_ENV)


@pytest.fixture
def gradscope(drivers: Drivers) -> Driver:
    """``gradscope ARGS`` processes, forked from one that imported TensorFlow (signals reach
    and end each as they would a process started anew: its own session, Python's handlers)."""
    return drivers.processes(_ENV)


def _both(reference: Driver | None, script: Path, *options: str, env: dict[str, str] = _ENV,
          processes: Processes | None = None) -> tuple[tuple[int, str, str], ...]:  # fmt: skip
    """``(returncode, stdout, stderr)`` of ``python SCRIPT`` (forked by ``reference``; a
    process of its own when None), then of ``gradscope run`` (forked by ``processes``; a
    process of its own when None)."""
    if reference is None:
        with _started([sys.executable, script.name], script.parent, env=env) as proc:
            out, err = proc.communicate(timeout=300)
            plain = (proc.returncode, out, err)
    else:
        logs = script.parent / "python"
        ran = reference.run([script.name], script.parent, env, logs)
        plain = (ran.code, ran.stdout, ran.stderr)
    if processes is not None:
        done = processes(["run", *options, script.name], script.parent, env)
        return plain, (done.returncode, done.stdout, done.stderr)
    args = [sys.executable, "-m", "gradscope", "run", *options, script.name]
    with _started(args, script.parent, env=env) as proc:
        out, err = proc.communicate(timeout=300)
    return plain, (proc.returncode, out, err)


def _error_piped(driver: Driver, args: list[str], cwd: Path,
                 fsize: int) -> tuple[int, str, str]:  # fmt: skip
    """``gradscope ARGS`` forked by ``driver``, its files at most ``fsize`` bytes and its
    standard error a pipe (a FIFO), which the limit never cuts, as when a terminal or a CI
    log reads it."""
    out, fifo = cwd / "gradscope-out.txt", cwd / "gradscope-err.fifo"
    os.mkfifo(fifo)
    read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    os.set_blocking(read_end, True)
    ours = os.open(fifo, os.O_WRONLY)  # a writer until the child ends: no early end of file
    said: list[bytes] = []

    def read() -> None:
        with os.fdopen(read_end, "rb") as stream:
            said.append(stream.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        driver.start(args, cwd, _ENV, out, fifo, fsize=fsize)
        code, _, _ = driver.finish()
    finally:
        os.close(ours)
        reader.join(timeout=60)
    assert said, "standard error was never read to its end"
    return code, out.read_text(), said[0].decode()


def _report(text: str) -> dict[str, object]:
    return json.loads(text[text.index("{\n") :])  # type: ignore[no-any-return]


def test_a_forked_child_ends_as_under_python_and_only_the_parent_reports(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    script = tmp_path / "forks.py"
    script.write_text(_TAPE + "grads()\npid = os.fork()\nif pid == 0:\n"
                      "    print('child', flush=True)\n    sys.exit(3)\n"
                      "print('parent saw', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n",
                      encoding="utf-8")  # fmt: skip
    python, run = _both(reference, script, "--format", "json", processes=gradscope_processes)
    assert python[:2] == (0, "child\nparent saw 3\n")
    assert run[1] == python[1] and run[0] == 1  # u: unexpected-none, in the parent's report
    assert run[2].count('"gradscope": 1') == 1
    assert [c["site"] for c in _report(run[2])["calls"]] == ["forks.py:6"]  # type: ignore[index]


@pytest.mark.parametrize("options", [(), ("--continue",)])
def test_threads_taking_gradients_run_as_under_python(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path, options: tuple[str, ...]
) -> None:
    script = tmp_path / "threads.py"
    script.write_text(_TAPE + "import threading\nout = []\n@tf.function\ndef step():\n"
                      "    with tf.GradientTape() as t:\n        l = tf.reduce_sum(w * 3.0)\n"
                      "    return t.gradient(l, w)\n"
                      "def work():\n    for _ in range(3):\n"
                      "        out.append((float(grads()[0][0]), float(step()[0])))\n"
                      "th = threading.Thread(target=work); th.start(); th.join()\nprint(out)\n",
                      encoding="utf-8")  # fmt: skip
    python, run = _both(
        reference, script, "--format", "json", *options, processes=gradscope_processes
    )
    assert python[:2] == (0, "[(2.0, 3.0), (2.0, 3.0), (2.0, 3.0)]\n")
    assert run[:2] == python[:2]
    assert "Traceback" not in run[2] and "StopProgram" not in run[2]
    report = _report(run[2])
    assert report["calls"] == [] and "are not watched" in str(report["notes"])


def test_a_gradient_in_a_finalizer_never_shows_gradscopes_traceback(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    script = tmp_path / "dels.py"
    script.write_text(_TAPE + "class A:\n    def __del__(self):\n"
                      "        print('del', float(grads()[0][0]), flush=True)\n"
                      "for _ in range(3):\n    a = A(); del a\nprint('end')\n",
                      encoding="utf-8")  # fmt: skip
    python, run = _both(reference, script, "--format", "json", processes=gradscope_processes)
    assert python[:2] == (0, "del 2.0\ndel 2.0\ndel 2.0\nend\n")
    assert run[1] == python[1] and run[0] == 1  # u: unexpected-none
    assert "Traceback" not in run[2] and "StopProgram" not in run[2]


def test_exec_writes_the_report_first(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    script = tmp_path / "execs.py"
    script.write_text(_TAPE + "grads()\nprint('before', flush=True)\n"
                      "os.execvp('sh', ['sh', '-c', 'echo after; exit 7'])\n",
                      encoding="utf-8")  # fmt: skip
    python, run = _both(
        reference, script, "--format", "json", "-o", "report.json", processes=gradscope_processes
    )
    assert python[:2] == (7, "before\nafter\n")
    assert run[:2] == python[:2]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == "replaced"
    assert [(p["variable"], p["kind"]) for p in report["problems"]] == [("u", "unexpected-none")]


def test_a_program_pointing_fd_2_at_dev_null_keeps_the_report(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    script = tmp_path / "quiet.py"
    script.write_text(_TAPE + "fd = os.open(os.devnull, os.O_WRONLY); os.dup2(fd, 2)\n"
                      "grads()\nprint('lost', file=sys.stderr)\n", encoding="utf-8")  # fmt: skip
    python, run = _both(reference, script, "--format", "json", processes=gradscope_processes)
    assert python[:2] == (0, "") and "lost" not in python[2]  # TF's start-up logs came first
    assert run[0] == 1 and _report(run[2])["problems"] and "lost" not in run[2]


def test_a_timeline_on_a_full_disk_is_one_line_after_the_report(
    reference: Driver, gradscope: Driver, tmp_path: Path
) -> None:
    script = tmp_path / "loop.py"
    script.write_text(_TAPE + "for _ in range(40):\n    grads()\nprint('done')\n",
                      encoding="utf-8")  # fmt: skip
    # writes past 4 KiB fail with EFBIG (Python ignores SIGXFSZ); gradscope's standard error
    # is a pipe, which the limit never cuts
    ran = reference.run([script.name], tmp_path, _ENV, tmp_path / "python", fsize=4096)
    python = (ran.code, ran.stdout, ran.stderr)
    run = _error_piped(gradscope, ["run", "--steps", "40", "--timeline", "t.json", script.name],
                       tmp_path, fsize=4096)  # fmt: skip
    assert python[:2] == (0, "done\n")
    assert run[0] == 2 and run[1] == python[1]
    *report, last = run[2].rstrip("\n").splitlines()
    assert "1 problem" in report[-1]  # the report, whole, before the error
    assert last == f"gradscope run: cannot write --timeline {tmp_path / 't.json'}: File too large"
    assert not any(p.name.endswith(".json") for p in tmp_path.iterdir())


_WAITS = (
    _TAPE
    + """\
import time
grads()
try:  # 'ready' inside the try: a signal right after it is the handler's, never a race
    print('ready', flush=True)
    time.sleep(120)
except KeyboardInterrupt:
    print('handled', flush=True)
    if len(sys.argv) > 1:
        raise
"""
)


def _signalled(tmp_path: Path, signum: int, *args: str,
               reference: Driver) -> tuple[int, str, str]:  # fmt: skip
    """The program run until it says ``ready``, then sent ``signum``: plain ``python`` forked
    by ``reference`` (a ``programs`` driver), or ``gradscope run`` (a ``processes`` one)."""
    script = tmp_path / "waits.py"
    script.write_text(_WAITS, encoding="utf-8")
    command = [] if reference.kind == "python" else [
        "run", "--format", "json", "-o", "report.json", "--timeline", "t.json"]  # fmt: skip
    return _signalled_forked(reference, [*command, script.name, *args], script.parent, signum)


def _signalled_forked(driver: Driver, args: list[str], cwd: Path,
                      signum: int) -> tuple[int, str, str]:  # fmt: skip
    """``ARGS`` forked by ``driver`` in ``cwd``, sent ``signum`` once its output says
    ``ready`` (killed, and waited for, on every other way out)."""
    name = "python" if driver.kind == "python" else "gradscope"
    out, err = cwd / f"{name}-out.txt", cwd / f"{name}-err.txt"
    pid = driver.start(args, cwd, _ENV, out, err)
    try:
        deadline = time.monotonic() + 300  # bounded: no hang
        while not _said(out).endswith("\n") and time.monotonic() < deadline:
            time.sleep(0.05)  # (the child makes the file once it runs)
        assert _said(out) == "ready\n", "the program never said it was ready"
        os.kill(pid, signum)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended already)
            os.kill(pid, signal.SIGKILL)
        raise
    finally:
        code, _, _ = driver.finish()
    return code, out.read_text(), err.read_text()


def _said(out: Path) -> str:
    return out.read_text() if out.exists() else ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_write_the_report_and_the_timeline(
    reference: Driver, gradscope: Driver, tmp_path: Path, signum: int
) -> None:
    python = _signalled(tmp_path, signum, reference=reference)
    assert python[:2] == (-signum, "ready\n")  # Python's default: ended on the spot
    run = _signalled(tmp_path, signum, reference=gradscope)
    assert run[:2] == (128 + signum, "ready\n")
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["outcome"], report["signal"]) == ("interrupted", signal.Signals(signum).name)
    timeline = json.loads((tmp_path / "t.json").read_text())
    assert [s["site"] for s in timeline["steps"]] == ["waits.py:6"]


@pytest.mark.parametrize(
    ("reraise", "outcome", "code"), [((), "finished", 1), (("x",), "interrupted", 130)]
)
def test_ctrl_c_is_the_programs_and_its_report_is_written(
    reference: Driver,
    gradscope: Driver,
    tmp_path: Path,
    reraise: tuple[str, ...],
    outcome: str,
    code: int,
) -> None:
    python = _signalled(tmp_path, signal.SIGINT, *reraise, reference=reference)
    run = _signalled(tmp_path, signal.SIGINT, *reraise, reference=gradscope)
    assert run[1] == python[1] == "ready\nhandled\n"
    assert run[0] == code
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["outcome"] == outcome and len(report["problems"]) == 1
    assert (tmp_path / "t.json").exists()


def test_sites_are_the_programs_lines_wherever_it_moves(
    reference: Driver, gradscope_processes: Processes, tmp_path: Path
) -> None:
    """A program that ``chdir``s into an installed package, then into a folder it removes:
    its lines are still its own (not ``bin/gradscope``), and nothing fails looking them up."""
    script = tmp_path / "moves.py"
    script.write_text(_TAPE + "import click, tempfile\n"
                      "os.chdir(os.path.dirname(click.__file__))\ngrads()\n"
                      "gone = tempfile.mkdtemp(); os.chdir(gone); os.rmdir(gone)\ngrads()\n"
                      "print('moved')\n", encoding="utf-8")  # fmt: skip
    python, run = _both(
        reference, script, "--format", "json", "--steps", "2", processes=gradscope_processes
    )
    assert python[:2] == (0, "moved\n")
    assert run[:2] == (1, python[1])  # u: unexpected-none
    report = _report(run[2])
    assert [c["site"] for c in report["calls"]] == ["moves.py:6", "moves.py:6"]  # type: ignore[index]
    assert [c["target"]["source"] for c in report["calls"]] == ["moves.py:5"] * 2  # type: ignore[index]


def test_the_environment_and_tensorflows_logger_are_the_programs(tmp_path: Path) -> None:
    """gradscope's quiet import of TensorFlow (``TF_CPP_MIN_LOG_LEVEL``, its logger at
    ERROR) is not the program's: it sees the environment and the warnings it would see."""
    script = tmp_path / "logs.py"
    script.write_text(_TAPE + "print(os.environ.get('TF_CPP_MIN_LOG_LEVEL'))\n"
                      "tf.get_logger().warning('the program warns')\ngrads()\n",
                      encoding="utf-8")  # fmt: skip
    env = {k: v for k, v in _ENV.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    python, run = _both(None, script, env=env)  # both processes of their own
    # None, or "1" where JAX is installed (importing it sets that default); never gradscope's "2"
    assert python[0] == 0 and python[1] in ("None\n", "1\n")
    assert "WARNING:tensorflow:the program warns" in python[2]
    assert run[1] == python[1]
    assert "WARNING:tensorflow:the program warns\n" in run[2]
    # ... but not TensorFlow's start-up banners (python shows the oneDNN notice and absl's)
    banners = ("absl::InitializeLog", "oneDNN custom operations", "cpu_feature_guard", "cuInit")
    assert [b for b in banners if b in run[2]] == [], run[2]
