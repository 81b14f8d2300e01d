"""The Keras ``Monitor`` and ``gradscope run`` give one cause for one ``fit``: a custom
``train_step`` whose tape never records a layer the loss reads (it runs before the tape
opens) gives that layer no gradient; both say ``none:disconnected``, used only through the
line run outside the tape (the Monitor said ``none:nondifferentiable`` at a
``ReadVariableOp``: it analysed the whole step as if every op were on the tape). The
Monitor asks what ``run`` asks of the same ``tape.gradient`` (``graph_calls.tape_causes``).
Reference: bare TensorFlow's None gradients for the same step."""

from __future__ import annotations

import contextlib
import json
import runpy
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_in_process

pytestmark = pytest.mark.tf

PROGRAM = """\
import sys

import keras
import tensorflow as tf

import gradscope.keras


class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.pre = keras.layers.Dense(4, name="pre")
        self.head = keras.layers.Dense(1, name="head")

    def call(self, x):
        return self.head(self.pre(x))

    def train_step(self, data):
        x, y = data
        h = self.pre(x)  # outside the tape
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self.head(h) - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        pairs = zip(grads, self.trainable_variables)
        if "--drop-none" in sys.argv:  # a step that leaves out the None pairs itself
            pairs = [(g, v) for g, v in pairs if g is not None]
        self.optimizer.apply_gradients(pairs)
        return {"loss": loss}


keras.utils.set_random_seed(3)
model = Net()
model.compile(optimizer="sgd")
x = tf.random.stateless_normal((16, 3), seed=(1, 2))
y = tf.random.stateless_normal((16, 1), seed=(3, 4))
monitor = gradscope.keras.Monitor(every=1) if "--monitor" in sys.argv else None
model.fit(x, y, epochs=1, batch_size=16, verbose=0, callbacks=[monitor] if monitor else [])
"""


def _bare_nones() -> set[str]:
    """What bare TensorFlow gives no gradient in the program's step, run unwatched."""
    import keras
    import tensorflow as tf

    pre, head = keras.layers.Dense(4, name="pre"), keras.layers.Dense(1, name="head")
    x = tf.random.stateless_normal((16, 3), seed=(1, 2))
    y = tf.random.stateless_normal((16, 1), seed=(3, 4))
    head(pre(x))
    variables = pre.trainable_variables + head.trainable_variables
    h = pre(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((head(h) - y) ** 2)
    grads = tape.gradient(loss, variables)
    return {v.path for v, g in zip(variables, grads, strict=True) if g is None}


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parity") / "outside_tape.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def _monitor_rows(program: Path, args: list[str]) -> dict[str, Any]:
    argv = sys.argv
    sys.argv = [str(program), "--monitor", *args]
    try:
        with (pytest.warns(UserWarning, match="Gradients do not exist") if not args
              else contextlib.nullcontext()):  # fmt: skip
            done = runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.argv = argv
    (record, *_) = done["monitor"].steps
    return record["variables"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("args", [[], ["--drop-none"]], ids=["all pairs", "None pairs dropped"])
def test_monitor_says_what_run_says_of_a_layer_outside_the_tape(
    program: Path, args: list[str]
) -> None:
    """Also when the step drops the None pairs before ``apply_gradients``: the Monitor listed
    only what the optimizer got, and said nothing of the layer."""
    nones = _bare_nones()
    assert nones == {"pre/kernel", "pre/bias"}
    out = program.parent / "run.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), program.name,
                          *args, cwd=program.parent)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    (call,) = json.loads(out.read_text())["calls"]
    rows = _monitor_rows(program, args)
    assert set(rows) == set(call["sources"])
    line = PROGRAM.splitlines().index("        h = self.pre(x)  # outside the tape") + 1
    for name in nones:
        ran, seen = call["sources"][name], rows[name]
        assert ran["status"] == seen["status"] == "none:disconnected"
        assert ran["cut_points"] == [] and "cut_points" not in seen
        assert f"outside_tape.py:{line} " in ran["note"] and "not recording" in ran["note"]
        # one wording: the program's path as each door shows it (run: from its directory)
        assert seen["cause"] == ran["note"].replace("outside_tape.py", str(program))
    for name in set(call["sources"]) - nones:
        assert call["sources"][name]["status"] == rows[name]["status"] == "ok"


BRANCH = """\
import sys

import keras
import tensorflow as tf

import gradscope.keras


class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.a = keras.layers.Dense(1, name="a")
        self.b = keras.layers.Dense(1, name="b")

    def call(self, x):
        return self.a(x) + self.b(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            pred = tf.cond(tf.reduce_sum(x) > 1e9, lambda: self.b(x), lambda: self.a(x))
            loss = tf.reduce_mean((pred - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


keras.utils.set_random_seed(3)
model = Net()
model.compile(optimizer="sgd")
x = tf.random.stateless_normal((16, 3), seed=(1, 2))
y = tf.random.stateless_normal((16, 1), seed=(3, 4))
model(x)
monitor = gradscope.keras.Monitor(every=1) if "--monitor" in sys.argv else None
model.fit(x, y, epochs=1, batch_size=16, verbose=0, callbacks=[monitor] if monitor else [])
"""


def test_monitor_says_what_run_says_of_a_branch_not_taken(tmp_path: Path) -> None:
    """A ``tf.cond`` in a traced step whose branch that reads ``b`` is not taken: TensorFlow
    gives ``b`` zeros; both doors say ``zero`` and why (the Monitor said nothing)."""
    import tensorflow as tf

    program = tmp_path / "branch.py"
    program.write_text(BRANCH, encoding="utf-8")
    a, b = tf.Variable([[1.0]] * 3), tf.Variable([[1.0]] * 3)
    x = tf.random.stateless_normal((16, 3), seed=(1, 2))

    @tf.function
    def bare() -> Any:  # bare TensorFlow: the same cond, traced
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.cond(tf.reduce_sum(x) > 1e9, lambda: x @ b, lambda: x @ a))
        return tape.gradient(loss, [a, b])

    zeros = bare()[1]
    assert zeros is not None and not tf.reduce_any(zeros != 0)  # zeros, not None
    out = tmp_path / "run.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), program.name,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (call,) = json.loads(out.read_text())["calls"]
    argv = sys.argv
    sys.argv = [str(program), "--monitor"]
    try:
        rows = runpy.run_path(str(program), run_name="__main__")["monitor"].steps[0]["variables"]
    finally:
        sys.argv = argv
    line = BRANCH.splitlines().index(next(t for t in BRANCH.splitlines() if "tf.cond(" in t)) + 1
    for name in ("net/b/kernel", "net/b/bias"):
        ran, seen = call["sources"][name], rows[name]
        assert ran["status"] == seen["status"] == "zero"
        assert f"tf.cond at branch.py:{line}," in ran["note"]
        assert seen["cause"] == ran["note"].replace("branch.py", str(program))
    for name in ("net/a/kernel", "net/a/bias"):
        assert call["sources"][name]["status"] == rows[name]["status"] == "ok"
        assert "cause" not in rows[name]


# -- the matrix: one Keras fit per cause, Monitor and run field by field ----------------------

HEAD = """\
import sys

import keras
import tensorflow as tf

import gradscope.keras

keras.utils.set_random_seed(3)
x = tf.random.stateless_normal((8, 3), seed=(1, 2))
y = tf.random.stateless_normal((8, 1), seed=(3, 4))
"""
FIT = """
monitor = gradscope.keras.Monitor(every=1) if "--monitor" in sys.argv else None
if "--bare" not in sys.argv:
    model.fit(x, Y, epochs=1, batch_size=8, verbose=0, callbacks=[monitor] if monitor else [])
"""

#: name -> the program's model (``model``, and ``Y`` what it fits), each a cause of its own
MATRIX = {
    "nan_log": """
inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(1, name="d")(inputs))


def loss(y, p):
    return tf.reduce_mean(tf.math.log(p * 0.0))  # log of 0


model.compile(optimizer="sgd", loss=loss)
Y = y
""",
    "argmax_loss": """
inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(4, name="d")(inputs))


def loss(y, p):
    return tf.reduce_mean(tf.cast(tf.argmax(p, axis=-1), tf.float32) - y)  # argmax


model.compile(optimizer="sgd", loss=loss)
Y = y
""",
    "unused_head": """
inputs = keras.Input((3,))
a = keras.layers.Dense(1, name="a")(inputs)
b = keras.layers.Dense(1, name="b")(inputs)
model = keras.Model(inputs, {"a": a, "b": b})
model.compile(optimizer="sgd", loss={"a": "mse"})  # compile
Y = {"a": y}
""",
    "round_lambda": """
inputs = keras.Input((3,))
h = keras.layers.Dense(4, name="body")(inputs)
h = keras.layers.Lambda(lambda t: tf.round(t), name="quantize")(h)  # round
model = keras.Model(inputs, keras.layers.Dense(1, name="head")(h))
model.compile(optimizer="sgd", loss="mse")
Y = y
""",
    "stop_gradient": """
inputs = keras.Input((3,))
h = keras.layers.Dense(4, name="body")(inputs)
h = keras.layers.Lambda(lambda t: tf.stop_gradient(t), name="freeze")(h)  # stop
model = keras.Model(inputs, keras.layers.Dense(1, name="head")(h))
model.compile(optimizer="sgd", loss="mse")
Y = y
""",
    "integer_cast": """
inputs = keras.Input((3,))
model = keras.Model(inputs, [keras.layers.Dense(1, name="a")(inputs),
                             keras.layers.Dense(1, name="b")(inputs)])


def counted(y, p):
    return tf.reduce_mean(tf.cast(tf.cast(p, tf.int32), tf.float32) - y)  # cast


model.compile(optimizer="sgd", loss=["mse", counted])
Y = [y, y]
""",
    "integer_weight": """
class Scale(keras.layers.Layer):
    def build(self, shape):
        self.k = self.add_weight(shape=(), initializer="ones", dtype="int32", name="k")  # made

    def call(self, x):
        return x * tf.cast(self.k, x.dtype)


inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(1, name="head")(Scale(name="scale")(inputs)))
model.compile(optimizer="sgd", loss="mse")
Y = y
""",
    "untracked": """
class Scale(keras.layers.Layer):
    def __init__(self, **kw):
        super().__init__(**kw)
        self.s = tf.Variable(2.0, name="s")

    def call(self, x):
        return x * self.s


inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(1, name="head")(Scale(name="scale")(inputs)))
model.compile(optimizer="sgd", loss="mse")
Y = y
""",
    "frozen_after_compile": """
inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(1, name="head")(
    keras.layers.Dense(4, name="body")(inputs)))
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, epochs=1, batch_size=8, verbose=0)  # traced
model.get_layer("body").trainable = False
Y = y
""",
    "distributed": """
strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
with strategy.scope():
    inputs = keras.Input((3,))
    a = keras.layers.Dense(1, name="a")(inputs)
    b = keras.layers.Dense(1, name="b")(inputs)
    model = keras.Model(inputs, {"a": a, "b": b})
    model.compile(optimizer="sgd", loss={"a": "mse"})  # compile
Y = {"a": y}
""",
}


def _line_of(program: str, mark: str) -> int:
    return next(i for i, t in enumerate(program.splitlines(), 1) if mark in t)


def _short(value: Any) -> Any:
    """Paths as their file names: each door shows the program's path its own way (run: from
    its directory; the Monitor: as Python named its frames)."""
    import re

    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value]
    if not isinstance(value, str):
        return value
    value = re.sub(r"\bfunctional_\d+(_\d+)?/", "functional/", value)  # Keras' count of models
    return re.sub(r"[^\s`'(]*/([\w.]+\.py):", r"\1:", value)


def _bare(program: Path) -> dict[str, Any]:
    """Bare TensorFlow on the program's model and batch, unwatched: per trainable variable
    its gradient of the compiled loss in one traced step (None, or whether it is finite),
    and the variables the model's layers hold that ``trainable_variables`` leaves out."""
    import tensorflow as tf

    done = _runpy(program, "--bare")
    model, x, y = done["model"], done["x"], done["Y"]
    variables = model.trainable_variables

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            loss = model.compute_loss(x, y, model(x, training=True), training=True)
        return tape.gradient(loss, variables)

    grads = step()
    out = {v.path: None if g is None else bool(tf.reduce_all(tf.math.is_finite(g)))
           for v, g in zip(variables, grads, strict=True)}  # fmt: skip
    # a layer frozen after the step was traced: whether Keras' own step still moves it
    frozen = [v for v in model.variables if not v.trainable and "float" in str(v.dtype)]
    before = [v.numpy().copy() for v in frozen]
    if frozen:
        model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    out.update({v.path: bool((v.numpy() != old).any())
                for v, old in zip(frozen, before, strict=True)})  # fmt: skip
    listed = {id(v) for v in model.variables}
    layers = [layer for layer in model.layers if hasattr(layer, "s")]
    out["untracked"] = [layer.s.name.split(":")[0] for layer in layers if id(layer.s) not in listed]
    return out


def _runpy(program: Path, *args: str) -> dict[str, Any]:
    argv = sys.argv
    sys.argv = [str(program), *args]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Keras' "Gradients do not exist"
            return runpy.run_path(str(program), run_name="__main__")
    finally:
        sys.argv = argv


#: The cases whose fit raises (every variable without a gradient), in both doors.
RAISES = ("argmax_loss",)


def _monitored(program: Path, raises: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Monitor's first step record (its variables) and its findings, by variable."""
    import gradscope.keras

    made: list[Any] = []
    init = gradscope.keras.Monitor.__init__

    def keep(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        init(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gradscope.keras.Monitor, "__init__", keep)
        with pytest.raises(ValueError) if raises else contextlib.nullcontext():
            _runpy(program, "--monitor")
    (monitor,) = made
    rows = monitor.steps[0]["variables"] if monitor.steps else {}
    return rows, monitor.timeline["findings"]


@pytest.mark.parametrize("case", sorted(MATRIX))
def test_monitor_says_what_run_says(case: str, tmp_path: Path) -> None:
    """Per variable: the status, the cause's registry id, the cut points with their lines,
    the NaN origin, and the problem's kind and fix (its kind and line) are the same from the
    Monitor as from ``gradscope run`` on the same fit, and each status is what bare
    TensorFlow gives. Two lines only a door that watched the program from its start can know
    (the ``compile()`` that left a head without a loss, the ``add_weight`` that made an
    integer weight) the Monitor, attached at the ``fit``, gives as that ``fit()`` line."""
    from gradscope._src.timeline.findings import same_kind

    text = HEAD + MATRIX[case] + FIT
    program = tmp_path / f"{case}.py"
    program.write_text(text, encoding="utf-8")
    bare = _bare(program)
    out = tmp_path / "run.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), program.name,
                          cwd=tmp_path)  # fmt: skip
    raised = case in RAISES  # Keras' "No gradients provided for any variable"
    assert done.returncode == (4 if raised else 1), done.stderr[-2000:]
    ran = json.loads(out.read_text())
    fit_line = f"{case}.py:{_line_of(text, 'model.fit(x, Y')}"
    (call,) = [c for c in ran["calls"] if c["site"] == fit_line]
    rows, findings = _monitored(program, raised)
    assert bool(rows) != raised  # a step that raised records no row, its findings say why
    # each status against bare TensorFlow
    for name, source in call["sources"].items():
        reference = bare[name]
        expected = "ok" if reference else ("nan" if reference is False else None)
        assert source["status"] == expected or (
            reference is None and source["status"].startswith("none:")
        ), name
        if rows:  # a step that raised records none
            assert rows[name]["status"] == source["status"], name
            assert _short(rows[name].get("cut_points", [])) == _short(source["cut_points"]), name
            assert _short(rows[name].get("nan_origin")) == source.get("nan_origin"), name
            if "cause" in source and source["status"].startswith("none:"):  # a record's why
                assert rows[name]["why"]["id"] == source["cause"]["id"], name
    # each problem: the same kind, variable, and fix
    found = {(same_kind(f["kind"]), f["variable"]): _short(f) for f in findings}
    problems = {(same_kind(p["kind"]), p["variable"]): p for p in ran["problems"]}
    assert set(found) == set(problems)
    assert problems, "every case of the matrix has a problem"
    for key, problem in problems.items():
        seen = found[key]
        assert seen["fix"]["kind"] == problem["fix"]["kind"], key
        assert seen.get("cut_points", []) == _short(problem["cut_points"]), key
        only_run_knows = {"unread-output": "# compile", "not-floating": "# made"}
        mark = only_run_knows.get(problem["fix"]["kind"])
        if mark is not None:
            assert problem["fix"]["where"] == f"{case}.py:{_line_of(text, mark)}"
            assert seen["fix"]["where"] == fit_line
        elif mark is None:
            assert seen["fix"]["where"] == problem["fix"]["where"], key
    if case == "untracked":
        assert bare["untracked"] == ["s"] and set(problems) == {("never-trained", "s")}
