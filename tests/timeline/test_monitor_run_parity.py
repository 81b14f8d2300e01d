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
