"""The pytest plugin, run by pytest's own ``pytester`` in subprocesses (bounded): off unless
asked, ``--gradscope``, the marker, the fixture, the summary line, xdist workers. A run whose
test file imports TensorFlow first thing is forked from a driver that imported it once
(:func:`_imported`); a run whose point is when or whether TensorFlow is imported starts anew."""

from __future__ import annotations

import importlib.metadata
import os
import time

import pytest
from _pytest.pathlib import make_numbered_dir

from tests.conftest import SESSION_ENV, Drivers

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.tf, pytest.mark.slow]

TIMEOUT = 300  # seconds per inner run; each imports TensorFlow

#: Tests whose bare-TensorFlow answers (asserted inside them) gradscope must agree with.
GRADIENT_TESTS = """
import numpy as np
import pytest
import tensorflow as tf


def step(cut):
    w = tf.Variable([1.0, 2.0], name="w")
    b = tf.Variable([3.0], name="b")
    with tf.GradientTape() as tape:
        head = tf.stop_gradient(b[0]) if cut else b[0]
        loss = tf.reduce_sum(w * w) + head
    return tape.gradient(loss, [w, b])


def test_clean():
    assert all(g is not None for g in step(cut=False))


def test_cut():
    assert step(cut=True)[1] is None  # bare TensorFlow: no gradient for b


@pytest.mark.gradscope(allow_none=["b"])
def test_cut_allowed():
    assert step(cut=True)[1] is None


def test_nan():
    v = tf.Variable([0.0, 1.0], name="v")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sqrt(v))
    assert not np.all(np.isfinite(tape.gradient(loss, v).numpy()))  # bare TensorFlow: inf


def test_explicit(gradscope_watch):
    with gradscope_watch() as w:
        step(cut=True)
    assert [(p.variable, str(p.kind)) for p in w.report.problems] == [("b", "unexpected-none")]


def test_no_gradients():
    assert tf.reduce_sum(tf.ones([3])).numpy() == 3.0


def test_watches_itself():  # passes under --gradscope as under pytest: its block joins
    import gradscope

    w = tf.Variable([1.0], name="own")
    with gradscope.watch() as block:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        assert tape.gradient(loss, w).numpy().tolist() == [2.0]
    assert [(s.name, s.status) for c in block.report.calls for s in c.sources] == [("own", "ok")]
"""

PURE_PYTHON = """
import sys


def test_one():  # (a file that names TensorFlow is watched, so it is never named here)
    assert not [name for name in sys.modules if name.startswith("tensorf")]


def test_two():
    assert sum(range(4)) == 6
"""


#: ``python -m pytest ARGS``, as a script a ``programs`` driver runs
PYTEST_MAIN = "import sys, pytest\nsys.exit(pytest.console_main())\n"


def _imported(pytester: pytest.Pytester, drivers: Drivers, *args: str) -> pytest.RunResult:
    """``runpytest_subprocess(ARGS)``, forked from a driver that imported TensorFlow (for a
    file that imports it first thing anyway: when it is imported is not the point). Its
    environment is the pytester's; the driver's is the session's (:data:`SESSION_ENV`, shared
    with other files): what pytester changes is read once the child runs, but for ``HOME``,
    a new folder per test where Keras' import looks for its configuration (the default
    either way)."""
    base = make_numbered_dir(root=pytester.path, prefix="runpytest-", mode=0o700)
    script = base / "pytest_main.py"
    script.write_text(PYTEST_MAIN, encoding="utf-8")
    env = dict(os.environ)
    start = time.monotonic()
    ran = drivers.programs(SESSION_ENV).run(
        [str(script), f"--basetemp={base}", *args], pytester.path, env, base / "logs",
        kill_after=TIMEOUT,
    )  # fmt: skip
    return pytest.RunResult(ran.code, ran.stdout.splitlines(), ran.stderr.splitlines(),
                            time.monotonic() - start)  # fmt: skip


@pytest.fixture(autouse=True)
def _installed() -> None:
    """The plugin is found as pip installs it: a ``pytest11`` entry point named gradscope."""
    found = importlib.metadata.entry_points(group="pytest11", name="gradscope")
    assert [e.value for e in found] == ["gradscope._src.watch.pytest_plugin"]


def test_plugin_is_off_unless_asked(pytester: pytest.Pytester, drivers: Drivers) -> None:
    pytester.makepyfile(test_grads=GRADIENT_TESTS, test_pure=PURE_PYTHON)
    result = _imported(pytester, drivers, "-p", "no:cacheprovider", "test_grads.py")
    # only the marked test is watched (it asked); test_cut passes as in bare pytest
    result.assert_outcomes(passed=7)
    result.stdout.fnmatch_lines(["gradscope: 1 test watched, 1 gradient call; no unexpected "
                                 "None or NaN gradient"])  # fmt: skip
    assert "test_pure.py::test_one PASSED" in _verbose(pytester, "test_pure.py")


def _verbose(pytester: pytest.Pytester, *args: str) -> str:
    """A pure-Python file under the plugin, ``--gradscope`` or not: TensorFlow is never
    imported (test_one asserts it)."""
    plain = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", *args, timeout=TIMEOUT)
    asked = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "--gradscope", *args,
                                          timeout=TIMEOUT)  # fmt: skip
    plain.assert_outcomes(passed=2)
    asked.assert_outcomes(passed=2)
    asked.stdout.fnmatch_lines(["gradscope: 0 tests watched, 0 gradient calls; *"])  # no TF
    return str(plain.stdout)


def test_gradscope_fails_a_test_with_an_unexpected_none_or_nan(
    pytester: pytest.Pytester, drivers: Drivers
) -> None:
    pytester.makepyfile(test_grads=GRADIENT_TESTS)
    result = _imported(pytester, drivers, "-p", "no:cacheprovider", "--gradscope", "-rf")
    result.assert_outcomes(passed=5, failed=2)  # test_watches_itself too (issue 42 point 4)
    out = str(result.stdout)
    result.stdout.fnmatch_lines([
        "*gradscope: b got 1 unexpected-none*",
        "*gradscope: v got 1 nan*",
    ])  # fmt: skip
    # pytest's short summary (-rf) keeps the variable's name: the first line leads with it
    result.stdout.fnmatch_lines([
        "FAILED test_grads.py::test_cut - Failed: gradscope: b got 1 unexpected-none*",
        "FAILED test_grads.py::test_nan - Failed: gradscope: v got 1 nan*",
    ])  # fmt: skip
    cut = out[out.index("_ test_cut _") :]
    assert "none:stopped" in cut and "StopGradient" in cut  # the report, with its cut point
    assert "FAILED test_grads.py::test_cut " in out and "FAILED test_grads.py::test_nan " in out
    result.stdout.fnmatch_lines(["gradscope: 6 tests watched, 5 gradient calls; 2 failed: "
                                 "1 unexpected-none, 1 nan"])  # fmt: skip
    assert "gradscope watch · test_grads.py::test_cut" in cut


def test_marker_options_are_checked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marks="""
import pytest


@pytest.mark.gradscope(stpes=2)
def test_typo():
    pass


@pytest.mark.gradscope(steps=0)
def test_zero():
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=TIMEOUT)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*@pytest.mark.gradscope: no such option 'stpes'. Did you mean 'steps'?*",
        "*@pytest.mark.gradscope: steps must be a whole number of at least 1, saw 0*",
    ])  # fmt: skip
    # once, not chained to the UsageError it came from (the failures, not the short summary,
    # which repeats each message where the terminal is wide enough)
    said = result.stdout.str().split("short test summary info")[0]
    assert "During handling" not in said
    assert said.count("steps must be a whole number of at least 1, saw 0") == 1


def test_gradscope_in_xdist_workers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_grads=GRADIENT_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gradscope", "-n", "2",
                                           timeout=TIMEOUT)  # fmt: skip
    result.assert_outcomes(passed=5, failed=2)
    result.stdout.fnmatch_lines(["*2 workers*", "gradscope: 6 tests watched, 5 gradient calls; "
                                 "2 failed: *"])  # fmt: skip
    assert "got 1 unexpected-none" in str(result.stdout)


FROZEN = """
import gc
import sys

BEFORE = [name for name in sys.modules if name.startswith("tensorf")]
import tensorflow as tf


def test_import_was_the_files_own():
    assert BEFORE == []  # the plugin imported none ahead: what the file sets first applies
    assert tf.reduce_sum(tf.ones([2])).numpy() == 2.0


def test_frozen():
    print(f"frozen={gc.get_freeze_count()}")
"""


@pytest.mark.parametrize("asked", [False, True])
def test_gradscope_freezes_what_tensorflows_import_made(
    pytester: pytest.Pytester, asked: bool
) -> None:
    """Under ``--gradscope`` the file imports TensorFlow itself, when it asks (what it set
    before still applies), with the collector paused, and what is alive then is frozen out of
    its walks, as in ``gradscope run``'s own process; without it, pytest is left as it is."""
    pytester.makepyfile(test_frozen=FROZEN)
    args = ["-p", "no:cacheprovider", "-s", *(["--gradscope"] if asked else [])]
    result = pytester.runpytest_subprocess(*args, timeout=TIMEOUT)
    result.assert_outcomes(passed=2)
    frozen = int(str(result.stdout).split("frozen=")[1].split()[0].rstrip("."))
    assert frozen > 100_000 if asked else frozen == 0


#: Scripts a test runs with ``runpy``: each imports TensorFlow itself and asserts bare
#: TensorFlow's own answer, a None gradient for one variable, before it ends.
SCRIPT_TF = """
import tensorflow as tf


@tf.custom_gradient
def scaled(x, s):
    def grad(dy):
        return dy * s, None  # forgot the gradient for s
    return x * s, grad


w = tf.Variable([[0.5, -1.0], [2.0, 0.3]], name="w")
scale = tf.Variable(1.5, name="scale")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(scaled(tf.matmul(tf.ones((1, 2)), w), scale) ** 2)
grads = tape.gradient(loss, [w, scale])
assert grads[0] is not None and grads[1] is None
"""

SCRIPT_KERAS = """
import keras
import tensorflow as tf

inputs = keras.Input((4,))
hidden = keras.layers.Dense(8, name="body")(inputs)
model = keras.Model(inputs, [keras.layers.Dense(1, name="main")(hidden),
                             keras.layers.Dense(1, name="aux")(hidden)])
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(model(tf.ones((2, 4)))[0])  # the aux head has no loss
grads = tape.gradient(loss, model.trainable_variables)
none = sorted(v.path for v, g in zip(model.trainable_variables, grads) if g is None)
assert none == ["aux/bias", "aux/kernel"], none
"""

#: A test file that names neither TensorFlow nor Keras: its tests import them by running
#: a script, so TensorFlow is first imported inside a test.
RUNS_SCRIPTS = """
import runpy


def test_keras_script():
    runpy.run_path("script_keras.py", run_name="__main__")


def test_tf_script():
    runpy.run_path("script_tf.py", run_name="__main__")


def test_pure():
    assert sum(range(4)) == 6
"""


@pytest.mark.parametrize(("only", "failed"), [("", 2), ("tf_script or pure", 1)])
def test_gradscope_watches_a_test_that_imports_tensorflow_itself(
    pytester: pytest.Pytester, drivers: Drivers, only: str, failed: int
) -> None:
    """The test's first import of TensorFlow (or of Keras, which imports it) starts the
    watch: a None gradient bare TensorFlow gives is a failure, never a silent pass."""
    pytester.makepyfile(test_runs=RUNS_SCRIPTS)
    (pytester.path / "script_tf.py").write_text(SCRIPT_TF, encoding="utf-8")
    (pytester.path / "script_keras.py").write_text(SCRIPT_KERAS, encoding="utf-8")
    chosen = only or "script or pure"
    plain = _imported(pytester, drivers, "-p", "no:cacheprovider", "-k", chosen)  # not watched
    plain.assert_outcomes(passed=failed + 1)  # bare TensorFlow's asserts hold in every script
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--gradscope", "-rf",
                                           "-k", chosen, timeout=TIMEOUT)  # fmt: skip
    result.assert_outcomes(passed=1, failed=failed)
    out = str(result.stdout)
    assert "FAILED test_runs.py::test_tf_script " in out
    tf_part = out[out.index("_ test_tf_script _") :]
    assert "scale" in tf_part and "none:nondifferentiable" in tf_part  # the custom gradient
    if failed == 2:
        keras_part = out[out.index("_ test_keras_script _") : out.index("_ test_tf_script _")]
        assert "aux/kernel" in keras_part and "none:disconnected" in keras_part
    # test_pure runs after TensorFlow is imported, so it is watched too (and passes)
    result.stdout.fnmatch_lines([f"gradscope: {failed + 1} tests watched, *; {failed} failed: *"])
    assert "could not start watching" not in out
