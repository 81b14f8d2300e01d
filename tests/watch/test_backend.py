"""gradscope never imports Keras (nor TensorFlow, which imports it) before the program does:
a program that picks its Keras backend itself gets it under ``gradscope run`` and inside
``gradscope.watch()`` as under ``python`` (issue 42 point 8). Fresh processes: the point is
what a process imports before the program's first line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

#: A backend that needs no TensorFlow (the dev extra installs JAX).
BACKEND, FRAMEWORK = "jax", "JAX"

PROGRAM = f"""\
import os
import sys

import gradscope

print("before:", sorted(m for m in ("keras", "tensorflow") if m in sys.modules))
with gradscope.watch() as block:  # watch() imports neither
    print("in watch():", sorted(m for m in ("keras", "tensorflow") if m in sys.modules))
print("calls", len(block.report.calls))
os.environ["KERAS_BACKEND"] = "{BACKEND}"
import keras

print("backend", keras.backend.backend())
"""


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERAS_BACKEND": "", "PYTHONPATH": str(Path(__file__).parents[2])}
    del env["KERAS_BACKEND"]
    return subprocess.run([sys.executable, *command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_the_program_picks_its_keras_backend_under_gradscope_run_as_under_python(
    tmp_path: Path,
) -> None:
    """Under ``python`` the program's Keras runs on the backend it chose; under ``gradscope
    run`` it gets the same one (had gradscope imported Keras first, it would run on
    TensorFlow), runs to its end, and the report is JAX's: gradscope watches it there."""
    (tmp_path / "pick.py").write_text(PROGRAM, encoding="utf-8")
    plain = _run("pick.py", cwd=tmp_path)
    watched = _run("-m", "gradscope", "run", "pick.py", cwd=tmp_path)
    lines = ["before: []", "in watch(): []", "calls 0", f"backend {BACKEND}"]
    assert (plain.returncode, plain.stdout.splitlines()) == (0, lines), plain.stderr
    assert (watched.returncode, watched.stdout.splitlines()) == (0, lines), watched.stderr
    import jax

    assert f"gradscope run · pick.py · {FRAMEWORK} {jax.__version__} · " in watched.stderr
