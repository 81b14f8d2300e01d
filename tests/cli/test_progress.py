"""Start-up and progress: spec errors never import TensorFlow; progress only on a terminal."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT, RunCli

BAD = """\
gradscope: 1
variables:
  w: {shape: [3]}
nodes:
  - {name: y, op: reduce_sum, inputs: [w2]}
losses:
  loss: y
"""
TIMEOUT = 120.0


@pytest.mark.parametrize("command", [["inspect"], ["check"], ["diff"], ["graph"]])
def test_spec_errors_never_import_tensorflow(
    command: list[str], run_cli: RunCli, write_spec, no_tensorflow: dict[str, str]
) -> None:
    path = write_spec(BAD)
    result = run_cli(*command, path, env=no_tensorflow)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"{path}:5:"), result.stderr
    assert "must not be imported" not in result.stderr


def _run_on_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run the CLI with standard error on a pseudo-terminal; (exit code, stdout, stderr).
    Bounded in time (:data:`TIMEOUT`), the process killed on every way out."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gradscope", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=follower,
            env={**os.environ, "TERM": "xterm", **(env or {})},
        )
    finally:
        os.close(follower)
    try:
        deadline = time.monotonic() + TIMEOUT
        chunks = []
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"gradscope {' '.join(args)}: still running after {TIMEOUT}s"
            if not select.select([leader], [], [], left)[0]:
                continue
            try:
                data = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        stdout = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
    return code, stdout, b"".join(chunks).decode(errors="replace")


@pytest.mark.tf
def test_progress_names_each_phase_on_a_terminal() -> None:
    code, stdout, stderr = _run_on_terminal("inspect", "configs/multitask.yaml", "--format", "json")
    assert code == 0
    assert stdout.startswith("{")  # the report itself is untouched
    for phase in ("importing TensorFlow", "building the model", "loss 1 of 3", "loss 3 of 3"):
        assert phase in stderr, stderr
    assert "s)" in stderr  # elapsed time, e.g. "(2.4s)"


@pytest.mark.tf
def test_progress_is_silent_when_quiet_or_piped(run_cli: RunCli) -> None:
    code, _, stderr = _run_on_terminal("inspect", "configs/multitask.yaml", "--quiet")
    assert code == 0
    assert "importing TensorFlow" not in stderr
    piped = run_cli("inspect", "configs/multitask.yaml")
    assert piped.returncode == 0 and "\x1b" not in piped.stderr  # no live line when piped
    for line in piped.stderr.splitlines():  # only a phase that ran long (tests/cli/test_common)
        assert re.fullmatch(r"gradscope: .+ \(still running after \d+s, \d+s in all\)", line)


@pytest.mark.tf
def test_progress_respects_no_color() -> None:
    code, _, plain = _run_on_terminal(
        "inspect", "configs/multitask.yaml", "--format", "json", env={"NO_COLOR": "1"}
    )
    assert code == 0 and "importing TensorFlow" in plain
    assert "\x1b[2m" not in plain and "\x1b[32m" not in plain  # no dim, no green
