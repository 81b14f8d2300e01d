"""A program that computes its gradients with JAX or PyTorch is refused by every door, at
once, in one line, exit code 2 (``frontends/backend.py``): ``gradscope run`` of a plain
``jax.grad`` program, or of a Keras fit with ``KERAS_BACKEND=jax``, said "No gradient call
was made · 0 problems" and exited 0; ``inspect`` of a target on JAX "0 pairs · 0 problems".
The reference is plain Python: the same program run unwatched computes with JAX."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gradscope._src.frontends import backend
from tests.conftest import Processes, run_in_process

jax = pytest.importorskip("jax", reason="JAX is not installed: pip install -e '.[dev]' has it")
pytest_plugins = ["pytester"]

TAIL = "and gradscope watches TensorFlow only: nothing was checked"

JAX_GRAD = """\
import jax
import jax.numpy as jnp

w = jnp.ones(3)
print("before")
g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * 2.0))(w)
print("after", g)
"""


def test_plain_python_computes_the_programs_gradients_with_jax() -> None:
    """What the refused program does unwatched: JAX gives the gradient (all zero: every
    path crosses the stop_gradient), and nothing is TensorFlow's."""
    import jax.numpy as jnp

    g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * 2.0))(jnp.ones(3))
    assert backend.framework_of(g) == "JAX" and g.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.tf
def test_run_refuses_a_jax_grad_program_at_its_first_gradient(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(JAX_GRAD, encoding="utf-8")
    done = run_in_process("run", "train.py", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == "before\n"  # stopped at jax.grad: "after" never printed
    assert done.stderr == (
        f"gradscope run: train.py computes its gradients with JAX (jax.grad called), {TAIL}\n"
    )
    assert jax.grad.__module__.startswith("jax")  # put back
    assert not getattr(jax.grad, "__gradscope_refuses__", False)


@pytest.mark.tf
def test_watch_block_refuses_jax_gradients() -> None:
    import jax.numpy as jnp

    import gradscope

    with pytest.raises(gradscope.UsageError) as refused, gradscope.watch():
        jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2))
    said = str(refused.value)
    assert said.startswith("gradscope.watch() at ") and "\n" not in said
    assert said.endswith(f"the code in the block computes its gradients with JAX (jax.grad "
                         f"called), {TAIL}")  # fmt: skip
    assert jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2)).tolist() == [2.0, 2.0]  # after


TARGETS = """\
import jax
import jax.numpy as jnp
import tensorflow as tf


def jax_loss():
    w = jnp.ones(3)
    return {"losses": {"main": lambda: jnp.sum(w * 2.0)}}


def grad_inside():
    v = tf.Variable([1.0, 2.0], name="v")

    def loss():
        g = jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2))
        return tf.reduce_sum(v * float(g[0]))

    return {"losses": {"main": loss}}
"""


@pytest.mark.tf
@pytest.mark.parametrize(
    ("command", "function", "how"),
    [
        ("inspect", "jax_loss", "its loss 'main' returns a jaxlib._jax.ArrayImpl"),
        ("check", "jax_loss", "its loss 'main' returns a jaxlib._jax.ArrayImpl"),
        ("graph", "jax_loss", "its loss 'main' returns a jaxlib._jax.ArrayImpl"),
        ("inspect", "grad_inside", "jax.grad called"),
    ],
)
def test_python_targets_on_jax_are_refused(
    tmp_path: Path, command: str, function: str, how: str
) -> None:
    """``inspect`` said "0 pairs: none · 0 problems", exit 0, of a loss JAX computes."""
    (tmp_path / "t.py").write_text(TARGETS, encoding="utf-8")
    done = run_in_process(command, f"t.py:{function}", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (
        f"gradscope {command}: the target t.py:{function} computes its gradients with JAX "
        f"({how}), {TAIL}"
    )


@pytest.mark.tf
def test_keras_on_jax_is_refused_by_the_monitor(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Monitor asks the backend of the Keras it is handed (``keras.backend.backend()``;
    this process's Keras runs on TensorFlow, so the answer is set here)."""
    import gradscope
    from gradscope.keras import Monitor

    monkeypatch.setattr(backend, "keras_backend", lambda: "jax")
    said = r"computes its gradients with JAX \(Keras 3 on its 'jax' backend\)"
    with pytest.raises(
        gradscope.UsageError, match=rf"^gradscope.keras.Monitor: the program {said}"
    ):
        Monitor(every=1)
    monkeypatch.setattr(backend, "keras_backend", lambda: "tensorflow")
    Monitor(every=1)  # on TensorFlow: no refusal


@pytest.mark.tf
def test_the_notebook_magic_refuses_a_cell_that_computes_with_jax() -> None:
    from IPython.core.error import UsageError as Said
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gradscope")
    result = shell.run_cell(
        "%%gradscope\nimport jax, jax.numpy as jnp\n"
        "g = jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2))\n"
    )
    assert isinstance(result.error_in_exec, Said)  # IPython shows its message alone, one line
    assert str(result.error_in_exec).endswith(
        f"the code in the block computes its gradients with JAX (jax.grad called), {TAIL}"
    )
    assert "g" not in shell.user_ns  # stopped at jax.grad


@pytest.mark.tf
def test_a_jax_test_under_pytest_gradscope_fails_with_the_refusal(
    pytester: pytest.Pytester,
) -> None:
    """It passed, "watched", with no unexpected None gradient."""
    pytester.makepyfile(
        test_jax=textwrap.dedent(
            """\
            import jax
            import jax.numpy as jnp


            def test_grad():
                assert jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2)).tolist() == [2.0, 2.0]
            """
        )
    )
    plain = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    plain.assert_outcomes(passed=1)
    watched = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "--gradscope")
    watched.assert_outcomes(failed=1)
    watched.stdout.fnmatch_lines([f"*the code in the block computes its gradients with JAX "
                                  f"(jax.grad called), {TAIL}*"])  # fmt: skip


FIT = """\
import keras
import numpy as np

print("backend", keras.backend.backend())
x = np.ones((16, 4), "float32")
y = np.ones((16, 1), "float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, verbose=0)
"""


KERAS_TARGET = """\
import keras
import numpy as np


def build():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    x = np.ones((4, 4), "float32")
    return {"losses": {"main": lambda: keras.ops.sum(model(x))}, "model": model}
"""

TF_ONLY = """\
import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * 3.0)
print(tape.gradient(loss, w).numpy().tolist())
"""


@pytest.mark.tf
def test_keras_on_the_jax_backend_is_refused_by_run_and_inspect(
    tmp_path: Path, gradscope_processes: Processes
) -> None:
    """``KERAS_BACKEND=jax``: Keras computes the fit's gradients with JAX, refused at its
    first ``jax.value_and_grad``; a target's model holds JAX arrays. The variable alone
    decides nothing: a program that uses TensorFlow only is watched as ever (gradscope's own
    import of Keras, with the environment's backend, is not read as the program's)."""
    (tmp_path / "fit.py").write_text(FIT, encoding="utf-8")
    (tmp_path / "t.py").write_text(KERAS_TARGET, encoding="utf-8")
    (tmp_path / "tf_only.py").write_text(TF_ONLY, encoding="utf-8")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    done = gradscope_processes(["run", "fit.py"], tmp_path, env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == (
        f"gradscope run: fit.py computes its gradients with JAX (jax.value_and_grad, called "
        f"by Keras 3 on its 'jax' backend), {TAIL}"
    )
    done = gradscope_processes(["inspect", "t.py:build"], tmp_path, env)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == (
        f"gradscope inspect: the target t.py:build computes its gradients with JAX (Keras 3 "
        f"on its 'jax' backend), {TAIL}"
    )
    done = gradscope_processes(["run", "tf_only.py"], tmp_path, env)
    assert (done.returncode, done.stdout) == (0, "[3.0, 3.0]\n"), done.stderr[-2000:]
    assert "1 call(s) at 1 site(s) · 0 problems" in done.stderr


@pytest.fixture
def fake_torch(tmp_path: Path) -> Iterator[Any]:
    """A module named ``torch`` with PyTorch's gradient APIs (PyTorch is not installed here):
    what the import hook must catch when a program imports it while a door watches."""
    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from torch import autograd\n\n\nclass Tensor:\n    def backward(self):\n"
        "        return 'ran'\n",
        encoding="utf-8",
    )
    (package / "autograd.py").write_text(
        "def grad(*a):\n    return 'ran'\n\n\ndef backward(*a):\n    return 'ran'\n",
        encoding="utf-8",
    )
    assert "torch" not in sys.modules
    sys.path.insert(0, str(tmp_path))
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
            del sys.modules[name]


def test_pytorch_imported_while_watched_refuses_its_gradients(fake_torch: Any) -> None:
    with backend.refusing("the program"):
        import torch

        with pytest.raises(backend.Refused) as refused:
            torch.Tensor().backward()
        assert str(refused.value) == (
            f"the program computes its gradients with PyTorch (Tensor.backward called), {TAIL}"
        )
        with pytest.raises(backend.Refused, match=r"torch\.autograd\.grad called"):
            torch.autograd.grad()
    assert torch.Tensor().backward() == "ran" and torch.autograd.grad() == "ran"  # put back
