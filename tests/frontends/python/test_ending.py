"""A Python target that tries to end the process: one line, exit code 5, never a pass.

Plain Python is the reference: the same build function and loss called by ``python -c``
ends the program (the status it gave, a traceback and 1, -11 for a segfault); under
gradscope each is one line naming what the target did, exit code 5 (never 0, 1 or 2's
meaning), and the report owns standard output whatever the target does to file
descriptor 1.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gradscope._src.errors import ExitCode
from tests.conftest import ROOT, Drivers, Processes
from tests.forked import Driver

pytestmark = pytest.mark.tf

TARGET = """\
import os, sys, threading, time
import tensorflow as tf

w = tf.Variable(1.0, name="w")
MODE = os.environ.get("MODE", "")


class Stop(BaseException):
    pass


def build():
    def loss():
        if MODE == "os-exit":
            os._exit(0)
        if MODE == "sys-exit-0":
            sys.exit(0)
        if MODE == "sys-exit-2":
            sys.exit(2)
        if MODE == "exec":
            os.execvp(sys.executable, [sys.executable, "-c", "pass"])
        if MODE == "base-exception":
            raise Stop("enough")
        if MODE == "segfault":
            import ctypes
            ctypes.string_at(0)
        return w * 2.0

    if MODE == "sleep":
        open(os.environ["READY"], "w").close()
        time.sleep(3600)
    if MODE == "build-exits":
        sys.exit(0)
    if MODE == "thread":
        threading.Thread(target=time.sleep, args=(3600,), name="sleeper").start()
    if MODE == "stdout-devnull":
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    if MODE == "stdout-written":
        print("print from the target")
        os.write(1, b"os.write from the target\\n")
        os.system("echo from a child process")
    return {"losses": {"main": loss}}


if __name__ == "__main__":  # the reference: plain Python calling the same target
    build()["losses"]["main"]()
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ending")
    (path / "target.py").write_text(TARGET, encoding="utf-8")
    return path


@pytest.fixture
def forked(drivers: Drivers) -> Driver:
    """``gradscope ARGS`` run by ``main()`` in a child of one process that imported gradscope
    and TensorFlow (the session's, shared with other files)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GRADSCOPE_TRACEBACK", None)
    return drivers.cli(env, tensorflow=True)


@pytest.fixture
def python(drivers: Drivers) -> Driver:
    """``python target.py``, forked from one process that imported TensorFlow."""
    return drivers.programs(os.environ)


def _python(python: Driver, folder: Path, mode: str) -> int:
    """What plain Python does with the same target: its exit code."""
    logs = folder / "python" / mode
    return python.run(["target.py"], folder, {**os.environ, "MODE": mode}, logs,
                      kill_after=120).code  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "python_code", "said"),
    [
        ("os-exit", 0, "the target called os._exit(0), which ends the process"),
        ("sys-exit-0", 0, "the target called sys.exit(0), which ends a Python program"),
        ("sys-exit-2", 2, "the target called sys.exit(2), which ends a Python program"),
        ("exec", 0, "the target called os.exec*("),
        ("base-exception", 1, "the target raised Stop, a BaseException that is not an Exception"),
        ("build-exits", 0, "target.py:33: the target called sys.exit(0)"),
    ],
)
def test_target_that_ends_the_process_is_exit_5_in_one_line(
    forked: Driver,
    python: Driver,
    folder: Path,
    tmp_path: Path,
    mode: str,
    python_code: int,
    said: str,
) -> None:
    assert _python(python, folder, mode) == python_code  # Python ends the program so
    for command in (["inspect", "target.py:build", "--format", "json"],
                    ["check", "target.py:build", "--format", "github"]):  # fmt: skip
        run = forked.run([*command, "-q"], folder, {**os.environ, "MODE": mode}, tmp_path)
        assert run.code == ExitCode.TARGET_ENDED == 5, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and said in lines[0], run.stderr
        assert lines[0].startswith(f"gradscope {command[0]}: ")
        assert "Traceback" not in run.stderr
        if "json" in command:  # the failure as data where the report would be (error-v1.json)
            error = json.loads(run.stdout)["error"]
            assert (error["kind"], error["exit_code"], error["message"]) == (
                "target-ended", 5, lines[0])  # fmt: skip
        else:
            assert run.stdout == ""


def test_target_segfault_under_python_is_signal_11(python: Driver, folder: Path) -> None:
    """The reference for the supervised case (tests/cli/test_supervise.py)."""
    assert _python(python, folder, "segfault") == -11


@pytest.mark.parametrize("mode", ["stdout-devnull", "stdout-written"])
def test_report_owns_standard_output_whatever_the_target_does_to_fd_1(
    forked: Driver, folder: Path, tmp_path: Path, mode: str
) -> None:
    run = forked.run(["inspect", "target.py:build", "--format", "json", "-q"], folder,
                     {**os.environ, "MODE": mode}, tmp_path)  # fmt: skip
    assert run.code == 0, run.stderr
    report = json.loads(run.stdout)  # the whole of standard output is the report
    assert report["losses"]["main"]["variables"]["w"]["status"] == "ok"
    if mode == "stdout-written":
        for text in ("print from", "os.write from", "from a child process"):
            assert text in run.stderr


def test_target_thread_left_running_ends_after_the_report(
    folder: Path, gradscope_processes: Processes
) -> None:
    """Python waits for a non-daemon thread forever; gradscope reports, then ends (``python
    -m gradscope``, its interpreter's own end, forked from one that imported TensorFlow)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MODE": "thread"}
    done = gradscope_processes(["inspect", "target.py:build", "-q"], folder, env)
    assert done.returncode == 0, done.stderr
    assert "1 pair: 1 ok" in done.stdout
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "gradscope: 1 thread the target started (sleeper) still running 5 s after the report"
        )
    )
