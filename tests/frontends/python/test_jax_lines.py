"""Which backend a program's gradients come from (``frontends/python/jax_lines.py``), read
without importing Keras, JAX or TensorFlow; Keras on PyTorch refused in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradscope._src.frontends.python import jax_lines


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("import jax\nimport jax.numpy as jnp\n", True),
        ("from flax import nnx\nimport optax\n", True),
        ("import jax\nimport tensorflow as tf\n", False),  # TensorFlow's calls stay watched
        ("import jax\nfrom keras import layers\n", False),  # Keras decides (KERAS_BACKEND)
        ("import numpy as np\n# jax is not imported here\n", False),
    ],
)
def test_a_script_is_plain_jax_when_it_imports_jax_and_names_no_tensorflow(
    tmp_path: Path, text: str, plain: bool
) -> None:
    script = tmp_path / "train.py"
    script.write_text(text, encoding="utf-8")
    assert jax_lines._plain_jax(str(script)) is plain


def test_a_missing_script_is_not_plain_jax(tmp_path: Path) -> None:
    assert jax_lines._plain_jax(str(tmp_path / "missing.py")) is False


def test_keras_on_pytorch_is_refused_in_one_line(tmp_path: Path) -> None:
    """``KERAS_BACKEND=torch``: exit code 2 and one line naming the backend, before anything
    is imported or run (the program would have printed)."""
    script = tmp_path / "train.py"
    script.write_text("print('ran')\n", encoding="utf-8")
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    done = subprocess.run([sys.executable, "-m", "gradscope", "run", str(script)], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert "KERAS_BACKEND=torch" in line and "PyTorch" in line and "Traceback" not in line
