"""Which framework computes a program's gradients, decided in one place for every door
(``frontends/backend.py``): JAX's are watched (Keras 3 on its ``jax`` backend and plain
``jax.grad``), PyTorch's are refused at once, in one line, exit code 2. Before JAX was
watched, ``gradscope run`` of a ``jax.grad`` program said "No gradient call was made · 0
problems" and exited 0; then it was refused; now it is reported. The references are bare JAX
and bare TensorFlow computing the same thing in the test."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.frontends import backend
from tests.conftest import Processes, run_in_process

jax = pytest.importorskip("jax", reason="JAX is not installed: pip install -e '.[dev]' has it")
pytest_plugins = ["pytester"]

TAIL = "and gradscope watches TensorFlow and JAX only: nothing was checked"
KERAS_FIX = "; KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax runs it where gradscope watches"

JAX_GRAD = """\
import jax
import jax.numpy as jnp

w = jnp.ones(3)
print("before")
g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * 2.0))(w)
print("after", g)
"""


def test_plain_python_computes_the_programs_gradients_with_jax() -> None:
    """What the program does unwatched: JAX gives the gradient (all zero: every path
    crosses the stop_gradient), and nothing is TensorFlow's."""
    import jax.numpy as jnp

    g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * 2.0))(jnp.ones(3))
    assert backend.framework_of(g) == "JAX" and g.tolist() == [0.0, 0.0, 0.0]


# -- which backend, read without importing Keras, JAX or TensorFlow --------------------------


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A process that has imported none of TensorFlow, Keras and JAX (as ``gradscope run``
    is when it starts), with no ``KERAS_BACKEND`` and an empty Keras home."""
    for name in ("tensorflow", "keras", "jax"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    return tmp_path


def test_keras_on_pytorch_in_a_module_is_refused_reading_its_file_only(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gradscope run -m pkg.train``: the module's file is read, never run (the package's
    ``__init__`` would exit); a package runs its ``__main__``."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    package = fresh / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise SystemExit('never run')\n", encoding="utf-8")
    (package / "train.py").write_text("import keras\n", encoding="utf-8")
    (package / "__main__.py").write_text("import numpy\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(fresh))
    with pytest.raises(backend.NotTensorFlow, match=r"^-m pkg.train computes its gradients "):
        backend.check_program(module="pkg.train", what="-m pkg.train")
    backend.check_program(module="pkg", what="-m pkg")  # its __main__ imports no Keras
    backend.check_program(module="missing.module")
    backend.check_program(str(fresh / "missing.py"))
    text = "import os\nos.environ.setdefault('KERAS_BACKEND', 'jax')\nimport keras\n"
    (package / "train.py").write_text(text, encoding="utf-8")
    backend.check_program(module="pkg.train")  # the program sets its own backend: JAX


def test_keras_home_and_the_environment_configure_the_backend(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert backend.configured_keras_backend() == "tensorflow"
    home = fresh / "keras_home"
    home.mkdir()
    (home / "keras.json").write_text(json.dumps({"backend": "jax"}), encoding="utf-8")
    assert backend.configured_keras_backend() == "jax" and backend.keras_on_jax()
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    assert backend.configured_keras_backend() == "torch"


def test_keras_on_pytorch_is_refused_before_the_program_runs(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``KERAS_BACKEND=torch`` and a program importing Keras: one line naming the backend and
    the backends that are watched; a program that never imports Keras is not refused."""
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    script = fresh / "train.py"
    script.write_text("import keras\nprint('ran')\n", encoding="utf-8")
    with pytest.raises(backend.NotTensorFlow) as refused:
        backend.check_program(str(script), what="train.py")
    assert str(refused.value) == (
        f"train.py computes its gradients with PyTorch (Keras 3 on its 'torch' backend), "
        f"{TAIL}{KERAS_FIX}"
    )
    script.write_text("import numpy\nprint('ran')\n", encoding="utf-8")
    backend.check_program(str(script), what="train.py")


# -- the doors, in a process that imported TensorFlow: JAX watched beside it -----------------


def _bare_tf_stop_gradient_is_none() -> bool:
    import tensorflow as tf

    w = tf.Variable(tf.ones(3))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.stop_gradient(w) * 2.0)
    return tape.gradient(loss, w) is None


@pytest.mark.tf
def test_run_watches_a_jax_grad_program_beside_tensorflow(tmp_path: Path) -> None:
    """In a process that imported TensorFlow, ``jax.grad`` is watched too: the cut JAX hides
    behind zeros is the None bare TensorFlow gives for the same computation."""
    (tmp_path / "train.py").write_text(JAX_GRAD, encoding="utf-8")
    grad = jax.grad
    done = run_in_process("run", "--format", "json", "-o", "-", "train.py", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]  # a problem: w's gradient is cut
    import jax.numpy as jnp

    g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * 2.0))(jnp.ones(3))
    assert done.stdout.startswith(f"before\nafter {g}\n")  # the program ran as under python
    report = json.loads(done.stdout[len(f"before\nafter {g}\n") :])
    (call,) = report["calls"]
    assert (call["api"], call["site"]) == ("jax.grad", "train.py:6")
    source = call["sources"]["w"]
    assert _bare_tf_stop_gradient_is_none() and source["status"] == "none:stopped"
    assert [(c["op"], c["source"]) for c in source["cut_points"]] == [
        ("StopGradient", "train.py:6")
    ]
    assert jax.grad is grad and not getattr(grad, "__gradscope__", False)  # put back


@pytest.mark.tf
def test_watch_block_reports_jax_gradients() -> None:
    import jax.numpy as jnp

    import gradscope

    w = jnp.array([1.0, -2.0])
    with gradscope.watch() as watched:
        got = jax.grad(lambda w: jnp.sum(w * w))(w)
    bare = jax.grad(lambda w: jnp.sum(w * w))(w)  # bare JAX, after the block
    assert got.tolist() == bare.tolist() == [2.0, -4.0]
    (call,) = watched.report.calls
    (source,) = call.sources
    assert source.status == "ok"
    assert source.norm == pytest.approx(float(np.linalg.norm(np.asarray(bare))))


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
@pytest.mark.parametrize("command", ["inspect", "check", "graph"])
def test_a_jax_loss_in_a_tensorflow_target_says_how_jax_targets_are_read(
    tmp_path: Path, command: str
) -> None:
    """Keras runs on TensorFlow here: a loss returning a JAX array is said in one line, with
    the way a target's JAX gradients are read (never "0 pairs · 0 problems")."""
    (tmp_path / "t.py").write_text(TARGETS, encoding="utf-8")
    done = run_in_process(command, "t.py:jax_loss", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (
        f"gradscope {command}: the target t.py:jax_loss: its loss 'main' returns a "
        "jaxlib._jax.ArrayImpl (JAX) while Keras runs on tensorflow: gradscope reads a Python "
        "target's JAX gradients through Keras 3 on its 'jax' backend (KERAS_BACKEND=jax, the "
        "variables Keras variables), and a plain JAX program's through gradscope run"
    )


@pytest.mark.tf
def test_jax_inside_a_tensorflow_loss_is_a_constant_of_it(tmp_path: Path) -> None:
    """``jax.grad`` called inside a TensorFlow loss (it was refused): its result is a
    number the loss multiplies by, and v's gradient is bare TensorFlow's."""
    import tensorflow as tf

    (tmp_path / "t.py").write_text(TARGETS, encoding="utf-8")
    done = run_in_process("inspect", "--format", "json", "t.py:grad_inside", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    loss = json.loads(done.stdout)["losses"]["main"]
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        value = tf.reduce_sum(v * 2.0)  # jax.grad of sum(w * w) at ones: 2
    bare = tape.gradient(value, v)
    pair = loss["variables"]["v"]
    assert pair["status"] == "ok"
    assert pair["norm"] == pytest.approx(float(tf.norm(bare)))


@pytest.mark.tf
def test_the_monitor_watches_keras_on_jax_and_refuses_pytorch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Monitor asks the backend of the Keras it is handed (``keras.backend.backend()``;
    this process's Keras runs on TensorFlow, so the answer is set here)."""
    import gradscope
    from gradscope.keras import Monitor

    monkeypatch.setattr(backend, "keras_backend", lambda: "torch")
    said = r"computes its gradients with PyTorch \(Keras 3 on its 'torch' backend\)"
    with pytest.raises(
        gradscope.UsageError, match=rf"^gradscope.keras.Monitor: the program {said}"
    ):
        Monitor(every=1)
    for watched in ("jax", "tensorflow"):
        monkeypatch.setattr(backend, "keras_backend", lambda watched=watched: watched)
        Monitor(every=1)  # no refusal


@pytest.mark.tf
def test_the_notebook_magic_watches_a_cell_that_computes_with_jax() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "gradscope")
    result = shell.run_cell(
        "%%gradscope\nimport jax, jax.numpy as jnp\n"
        "g = jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2))\n"
    )
    assert result.error_in_exec is None
    import jax.numpy as jnp

    bare = jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2))
    assert shell.user_ns["g"].tolist() == bare.tolist() == [2.0, 2.0]  # the cell ran


@pytest.mark.tf
def test_a_jax_test_under_pytest_gradscope_is_watched(pytester: pytest.Pytester) -> None:
    """A JAX test passes watched when its gradient flows, and fails when JAX's zeros hide a
    cut (bare TensorFlow gives None for ``tf.stop_gradient``)."""
    pytester.makepyfile(
        test_jax=textwrap.dedent(
            """\
            import jax
            import jax.numpy as jnp


            def test_grad():
                assert jax.grad(lambda w: jnp.sum(w * w))(jnp.ones(2)).tolist() == [2.0, 2.0]


            def test_cut():
                g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w) * w))(jnp.ones(2))
                assert g.tolist() == [1.0, 1.0]


            def test_all_cut():
                g = jax.grad(lambda w: jnp.sum(jax.lax.stop_gradient(w)))(jnp.ones(2))
                assert g.tolist() == [0.0, 0.0]
            """
        )
    )
    plain = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q")
    plain.assert_outcomes(passed=3)
    watched = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-q", "--gradscope")
    assert _bare_tf_stop_gradient_is_none()
    watched.assert_outcomes(passed=2, failed=1)
    watched.stdout.fnmatch_lines(["*test_all_cut*"])


FIT = """\
import keras
import numpy as np

print("backend", keras.backend.backend())
x = np.ones((16, 4), "float32")
y = np.ones((16, 1), "float32")
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="out")], name="net")
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, verbose=0)
"""


KERAS_TARGET = """\
import keras
import numpy as np


def build():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="out")], name="net")
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


def _bare_dense(summed: bool = False) -> dict[str, bool]:
    """Bare Keras on TensorFlow: which of FIT's variables get a gradient that is not all
    zero (its Dense layer, mean squared error against ones; KERAS_TARGET's sum of its
    outputs when ``summed``)."""
    import keras
    import tensorflow as tf

    x, y = np.ones((16, 4), "float32"), np.ones((16, 1), "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="out")], name="net")
    with tf.GradientTape() as tape:
        out = model(x)
        loss = tf.reduce_sum(out) if summed else keras.losses.mean_squared_error(y, out)
    grads = tape.gradient(loss, model.trainable_variables)
    return {v.path: g is not None and bool(np.any(np.asarray(g)))
            for v, g in zip(model.trainable_variables, grads, strict=True)}  # fmt: skip


@pytest.mark.tf
def test_keras_on_the_jax_backend_is_watched_by_run_and_inspect(
    tmp_path: Path, gradscope_processes: Processes
) -> None:
    """``KERAS_BACKEND=jax``: Keras computes the fit's gradients with JAX, watched at its
    ``jax.value_and_grad`` (the fit() line); a target's model holds JAX arrays. The variable
    alone decides nothing: a program that uses TensorFlow only is watched on TensorFlow
    (gradscope's own import of Keras, with the environment's backend, is not the program's)."""
    (tmp_path / "fit.py").write_text(FIT, encoding="utf-8")
    (tmp_path / "t.py").write_text(KERAS_TARGET, encoding="utf-8")
    (tmp_path / "tf_only.py").write_text(TF_ONLY, encoding="utf-8")
    bare = _bare_dense()
    assert bare == {"net/out/kernel": True, "net/out/bias": True}
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    done = gradscope_processes(["run", "--format", "json", "-o", "-", "fit.py"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("backend jax\n")
    (call,) = json.loads(done.stdout.partition("\n")[2])["calls"]
    assert (call["api"], call["site"]) == ("fit", "fit.py:9")
    assert {v: s["status"] for v, s in call["sources"].items()} == {
        v: "ok" if flows else "zero" for v, flows in bare.items()
    }
    done = gradscope_processes(["inspect", "--format", "json", "t.py:build"], tmp_path, env)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["tensorflow"] == "" and report["jax"] == jax.__version__
    assert {v: p["status"] for v, p in report["losses"]["main"]["variables"].items()} == {
        v: "ok" if flows else "zero" for v, flows in _bare_dense(summed=True).items()
    }
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
