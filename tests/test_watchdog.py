"""--timeout ends a run with exit 2 and one line naming the phase and the costliest node."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

_SCRIPT = """
import time
from gradscope._src import watchdog
with watchdog.limit(0.3, "inspect"):
    watchdog.note_phase("computing gradients")
    watchdog.note_node("'k' (linalg.inv, spec.yaml:6)")
    time.sleep(30)
"""


def test_timeout_exits_2_naming_the_phase_and_node() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=20, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "gradscope inspect: stopped after 0.3 s (--timeout) while computing gradients; its "
        "costliest node is 'k' (linalg.inv, spec.yaml:6); raise --timeout or make the spec "
        "smaller\n"
    )


_HIDDEN = """
import os, tempfile, time
from gradscope._src import watchdog
with watchdog.limit(0.3, "inspect"):
    watchdog.note_phase("importing TensorFlow")
    sink = tempfile.TemporaryFile()
    os.dup2(sink.fileno(), 2)  # as TensorFlow's import (its banners) or a target's code does
    time.sleep(30)
"""


def test_timeout_is_said_on_standard_error_while_fd_2_points_elsewhere() -> None:
    """A limit that expires while file descriptor 2 points at a file (TensorFlow's import
    catches its banners so; a target may point it at /dev/null) still says so on the
    standard error the command started with; it ended with exit 2 and nothing said."""
    done = subprocess.run(
        [sys.executable, "-c", _HIDDEN],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "gradscope inspect: stopped after 0.3 s (--timeout) while importing TensorFlow; "
        "raise --timeout (0: no limit)\n"
    )


def test_no_timeout_when_the_body_ends_in_time(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A body that ends in time: its timer is cancelled (no message, no exit after the limit
    passed); no limit (0): no timer at all."""
    from gradscope._src import watchdog

    ended: list[int] = []
    monkeypatch.setattr(watchdog.os, "_exit", ended.append)  # the timer's way out, recorded
    capfd.readouterr()
    threads = set(threading.enumerate())
    with watchdog.limit(0.05, "inspect"):
        ran = True
    time.sleep(0.25)  # five times the limit
    assert ran and ended == [] and capfd.readouterr().err == ""
    assert set(threading.enumerate()) <= threads  # the timer's thread is gone
    with watchdog.limit(0, "inspect"):
        assert set(threading.enumerate()) <= threads  # no timer started
    # the same limit around a body that overruns it does end (what the asserts above exclude)
    with watchdog.limit(0.05, "inspect"):
        time.sleep(0.25)
    assert ended == [2] and "stopped after 0.05 s (--timeout)" in capfd.readouterr().err
