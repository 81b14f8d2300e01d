"""A Python target's crash is one line and exit code 5, said by a parent process; signals
sent to gradscope reach the command and end it as they would end one process."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from gradscope._src.cli.supervise import wanted
from tests.conftest import ROOT, Drivers
from tests.frontends.python.test_ending import TARGET


def test_supervise_wanted_for_python_targets_only() -> None:
    assert wanted(["inspect", "target.py:build", "--format", "json"]) == "inspect"
    assert wanted(["--traceback", "check", "configs/a.yaml", "models:build"]) == "check"
    assert wanted(["diff", "pkg.models:build", "a", "b"]) == "diff"
    assert wanted(["inspect", "configs/multitask.yaml"]) is None
    assert wanted(["run", "train.py"]) is None  # a program: proc-model's process model
    assert wanted(["plot", "t.json", "-o", "x:y.png"]) is None
    assert wanted([]) is None


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "target.py").write_text(TARGET, encoding="utf-8")
    return tmp_path


def _env(**more: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **more}
    env.pop("GRADSCOPE_TRACEBACK", None)
    return env


@pytest.mark.tf
def test_target_segfault_is_one_line_and_exit_5(drivers: Drivers, tmp_path: Path) -> None:
    """Plain Python: -11 and nothing on stderr (tests/frontends/python/test_ending.py).
    ``gradscope`` is a process of its own, forked from one that imported TensorFlow."""
    folder = _folder(tmp_path)
    env = _env(MODE="segfault")
    done = drivers.processes(env).run(["inspect", "target.py:build", "-q"], folder, env,
                                      tmp_path / "logs", kill_after=240)  # fmt: skip
    assert done.code == 5, done.stderr
    assert done.stdout == ""
    # the loss runs as code autograph generated from it: no line of target.py is on the stack
    assert done.stderr.strip().splitlines() == [
        "gradscope inspect: the target's code crashed the process: SIGSEGV "
        "(a segmentation fault); gradscope checked nothing (exit code 5)"
    ]


@pytest.mark.tf
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signal_to_gradscope_reaches_the_command_and_leaves_nothing(
    drivers: Drivers, tmp_path: Path, signum: int
) -> None:
    """``gradscope`` is a process of its own (forked from one that imported TensorFlow, its
    own session), sent the signal as ``kill`` sends it."""
    folder = _folder(tmp_path)
    ready = folder / "ready"
    env = _env(MODE="sleep", READY=str(ready))
    driver = drivers.processes(env)
    pid = driver.start(["inspect", "target.py:build", "-q"], folder, env, tmp_path / "out.txt",
                       tmp_path / "err.txt", kill_after=240)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not ready.exists() and time.monotonic() < deadline and _running(pid):
            time.sleep(0.2)
        assert ready.exists(), (tmp_path / "err.txt").read_text()
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        assert len(children) == 1  # the command runs in the one child
        os.kill(pid, signum)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        raise
    finally:
        code, _, _ = driver.finish()  # (its driver waits for it, killed at the time limit)
    # as one Python process ends on it: Ctrl-C (kill -INT) is gradscope's 130
    assert code == (130 if signum == signal.SIGINT else -signum)
    time.sleep(0.5)
    assert not Path(f"/proc/{children[0]}").exists()  # no orphan left behind


def _running(pid: int) -> bool:
    """Whether the forked process has not ended (a zombie until its driver reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
