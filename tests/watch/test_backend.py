"""gradscope never imports Keras (nor TensorFlow, which imports it) before the program does:
a program that picks its Keras backend itself gets it under ``gradscope run`` and inside
``gradscope.watch()`` as under ``python`` (issue 42 point 8). Fresh processes: the point is
what a process imports before the program's first line."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

#: A backend that needs no TensorFlow: JAX when installed (pip install jax); else numpy's,
#: whose import fails the same way under both without SciPy (the lines before it still say
#: that Keras was not imported first).
BACKEND = "jax" if importlib.util.find_spec("jax") is not None else "numpy"

PROGRAM = f"""\
import os
import sys

import gradscope

print("before:", sorted(m for m in ("keras", "tensorflow") if m in sys.modules))
with gradscope.watch() as block:  # watch() imports neither
    print("in watch():", sorted(m for m in ("keras", "tensorflow") if m in sys.modules))
    os.environ["KERAS_BACKEND"] = "{BACKEND}"
    import keras

    print("backend", keras.backend.backend())
print("calls", len(block.report.calls))
"""


def _run(*command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERAS_BACKEND": "", "PYTHONPATH": str(Path(__file__).parents[2])}
    del env["KERAS_BACKEND"]
    return subprocess.run([sys.executable, *command], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_the_program_picks_its_keras_backend_under_gradscope_run_as_under_python(
    tmp_path: Path,
) -> None:
    (tmp_path / "pick.py").write_text(PROGRAM, encoding="utf-8")
    plain = _run("pick.py", cwd=tmp_path)
    watched = _run("-m", "gradscope", "run", "pick.py", cwd=tmp_path)
    lines = [line for line in plain.stdout.splitlines() if not line.startswith("gradscope")]
    assert lines[:2] == ["before: []", "in watch(): []"], plain.stderr
    if BACKEND == "jax":
        assert lines[2:] == ["backend jax", "calls 0"], plain.stderr
    else:
        assert "No module named 'scipy'" in plain.stderr
    assert watched.stdout.startswith(plain.stdout), watched.stderr
