"""A target that cannot work is refused before TensorFlow is imported and before user code runs.

Each command runs in a subprocess whose ``import tensorflow`` fails loudly (``no_tensorflow``):
an answer there proves the command never paid for TensorFlow, and a marker file the target's
top level would write proves none of the user's code ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RunCli

SCRIPT = """\
import tensorflow as tf
import keras

open("RAN", "w").close()
model = keras.Sequential([keras.layers.Dense(1)])
model.compile("sgd", "mse")
model.fit(tf.ones((4, 2)), tf.ones((4, 1)), verbose=0)
"""

TARGETS = """\
open("RAN", "w").close()

def build_model():
    import tensorflow as tf
    return {"losses": {"a": lambda: tf.constant(1.0)}}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(SCRIPT, encoding="utf-8")
    (tmp_path / "targets.py").write_text(TARGETS, encoding="utf-8")
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('open("RAN", "w").close()\n', encoding="utf-8")
    (pkg / "models.py").write_text(TARGETS, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nosuch.py:build", "nosuch.py:build: no such file: nosuch.py"),
        (
            "targets.py::build_model",
            "a target names its function after one colon: targets.py:build_model",
        ),
        ("targets.py:build", "the module has no function 'build' (did you mean 'build_model'?)"),
        (
            "train.py:build",
            "the module has no function 'build' (it is a script: gradscope run "
            "train.py runs it and watches its gradients)",
        ),
        ("train.py", "train.py: a script, not a target: gradscope run train.py runs it"),
        (
            "targets.py",
            "targets.py: name the function that builds the target, as targets.py:build",
        ),
        ("targets.py:", "name the function after the colon, as targets.py:build"),
        ("nosuchmod:build", "no module named 'nosuchmod' (looked in the current directory"),
        ("pkg.models:buld", "the module has no function 'buld' (it defines build_model)"),
    ],
)
def test_precheck_refuses_before_tensorflow_and_user_code(
    target: str, message: str, project: Path, run_cli: RunCli, no_tensorflow: dict[str, str]
) -> None:
    done = run_cli("inspect", target, cwd=project, env=no_tensorflow)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "must not be imported" not in done.stderr  # TensorFlow was never asked for
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (project / "RAN").exists()  # the target's module never ran


def test_precheck_lets_a_good_target_through(project: Path) -> None:
    from gradscope._src.frontends.python.precheck import precheck

    precheck(f"{project / 'targets.py'}:build_model")  # no error, nothing imported
    assert not (project / "RAN").exists()


def test_precheck_stays_silent_when_names_are_dynamic(tmp_path: Path) -> None:
    """``from x import *`` or a module ``__getattr__`` may define any name: the import says."""
    from gradscope._src.frontends.python.precheck import precheck

    star = tmp_path / "star.py"
    star.write_text("from os.path import *\n", encoding="utf-8")
    precheck(f"{star}:anything")
    dynamic = tmp_path / "dyn.py"
    dynamic.write_text("def __getattr__(name):\n    return lambda: None\n", encoding="utf-8")
    precheck(f"{dynamic}:anything")
    bound = tmp_path / "bound.py"
    bound.write_text(
        "try:\n    from a import build\nexcept ImportError:\n    build = None\n"
        "if True:\n    other = 1\nfor loop_name in []:\n    pass\n",
        encoding="utf-8",
    )
    for name in ("build", "other", "loop_name"):
        precheck(f"{bound}:{name}")


def test_run_of_a_target_suggests_inspect(project: Path, run_cli: RunCli) -> None:
    done = run_cli("run", "targets.py:build_model", cwd=project)
    assert done.returncode == 2
    assert (
        "targets.py:build_model names a Python target: gradscope inspect targets.py:build_model "
        "checks it; gradscope run targets.py runs the file as a script"
    ) in done.stderr
    assert not (project / "RAN").exists()


@pytest.mark.tf
def test_graph_asks_for_the_loss_before_tracing(tmp_path: Path, run_cli: RunCli) -> None:
    """A Python target's losses are known once its function returned: asked then, not after
    tracing every loss (a spec's before TensorFlow is imported at all)."""
    traced = tmp_path / "TRACED"
    (tmp_path / "two.py").write_text(
        "import tensorflow as tf\n\n"
        "def build():\n"
        "    v = tf.Variable(1.0, name='v')\n"
        f"    def traced():\n        open({str(traced)!r}, 'w').close()\n        return v * 2.0\n"
        "    return {'losses': {'a': traced, 'b': lambda: v * 3.0}}\n",
        encoding="utf-8",
    )
    done = run_cli("graph", "two.py:build", cwd=tmp_path)
    assert done.returncode == 2
    assert "two.py:build has 2 losses; pick one with --loss: a, b" in done.stderr
    assert not traced.exists()
