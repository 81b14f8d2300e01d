"""A ``fit`` that raises with the Keras ``Monitor``: before the exception goes on, unchanged
(the type and message bare Keras raises), the Monitor says why on standard error with the
cause, op and line ``gradscope run`` names, keeps the steps it recorded and writes its
timeline; Keras' own train function is back. It recorded and printed nothing: a
``Lambda(argmax)`` output fails Keras' first step with "No gradients provided for any
variable" while ``gradscope run`` names the ``ArgMax`` at the Lambda's line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_in_process

pytestmark = pytest.mark.tf

ARGMAX = """\
import sys

import keras
import numpy as np
import tensorflow as tf

import gradscope.keras

x = np.random.RandomState(0).randn(16, 4).astype("float32")
y = np.random.RandomState(1).randint(0, 3, size=(16,)).astype("float32")
inputs = keras.Input((4,))
h = keras.layers.Dense(3, name="dense")(inputs)
out = keras.layers.Lambda(lambda t: tf.cast(tf.argmax(t, axis=-1), tf.float32))(h)
model = keras.Model(inputs, out)
model.compile(optimizer="adam", loss="mse", run_eagerly="--eager" in sys.argv)
monitor = gradscope.keras.Monitor(every=1) if "--monitor" in sys.argv else None
model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[monitor] if monitor else [])
"""


def _run_program(path: Path, *args: str) -> tuple[dict[str, Any], BaseException]:
    """The program run in this process as ``python PATH ARGS`` would: its globals (the
    monitor, the model) and what it raised."""
    argv, names = sys.argv, {"__name__": "__main__", "__file__": str(path)}
    sys.argv = [str(path), *args]
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), names)
    except BaseException as error:  # what the program raises is what the test compares
        raised: BaseException = error
    else:
        raise AssertionError(f"{path.name} {' '.join(args)} raised nothing")
    finally:
        sys.argv = argv
    return names, raised


@pytest.mark.parametrize("eager", [False, True], ids=["traced", "run_eagerly"])
def test_monitor_says_why_fit_raised_on_no_gradients_as_run_says_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], eager: bool
) -> None:
    program = tmp_path / "argmax_fit.py"
    program.write_text(ARGMAX, encoding="utf-8")
    mode = ["--eager"] if eager else []
    _, bare = _run_program(program, *mode)  # bare Keras: what the program raises unwatched
    assert (type(bare), str(bare)) == (ValueError, "No gradients provided for any variable.")
    capsys.readouterr()
    out = tmp_path / "run.json"
    done = run_in_process("run", "--format", "json", "-o", str(out), program.name, *mode,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 4, done.stderr[-2000:]
    ran = {p["variable"]: p for p in json.loads(out.read_text())["problems"]}
    assert set(ran) == {"dense/kernel", "dense/bias"}
    (cut,) = ran["dense/kernel"]["cut_points"]
    line = ARGMAX.splitlines().index(next(t for t in ARGMAX.splitlines() if "argmax" in t)) + 1
    assert (cut["op"], cut["kind"], cut["source"]) == ("ArgMax", "nondifferentiable",
                                                       f"argmax_fit.py:{line}")  # fmt: skip

    capsys.readouterr()
    names, raised = _run_program(program, "--monitor", *mode)
    said = capsys.readouterr().err
    assert (type(raised), str(raised)) == (type(bare), str(bare))  # the program's own, unchanged
    site = names["monitor"].site  # the fit(...) line, the program's last
    assert site.endswith(f"argmax_fit.py:{ARGMAX.count(chr(10))}")
    found = {f["variable"]: f for f in names["monitor"].findings}
    where = found["dense/kernel"]["cut_points"][0]["source"]  # the Lambda's line, as a path
    assert where.endswith(f"argmax_fit.py:{line}") and Path(where.rpartition(":")[0]) == program
    assert (
        f"gradscope.keras.Monitor: fit at {site} raised ValueError in step 1, which got no "
        "gradient for 2 of its variables:\n"
        f"  fit at {site} gives dense/kernel, dense/bias no gradient (nondifferentiable): cut at "
        f"{found['dense/kernel']['cut_points'][0]['node']} (ArgMax) at {where}\n"
        f"  fix: At {where}, `tf.argmax` gives integer indices"
    ) in said
    assert set(found) == set(ran)
    for name, finding in found.items():
        assert finding["kind"] == "none" and finding["from_step"] == 1
        # the op, kind and line run names (the node: as each door sees it, a traced step's
        # op eagerly, and numbered by the Keras models this process made)
        said_cuts = [(c["op"], c["kind"], c["source"].replace(where, f"argmax_fit.py:{line}"))
                     for c in finding["cut_points"]]  # fmt: skip
        assert said_cuts == [(c["op"], c["kind"], c["source"]) for c in ran[name]["cut_points"]]
        assert finding["fix"]["kind"] == ran[name]["fix"]["kind"]
    model = names["model"]
    assert not hasattr(model, "_gradscope_monitor")  # Keras' own train function is back
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        model.train_on_batch(names["x"][:8], names["y"][:8])  # as bare Keras raises it
    assert capsys.readouterr().err == ""  # the Monitor is off the model: it says nothing


CUSTOM = """\
import keras
import tensorflow as tf

import gradscope.keras


class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.used = keras.layers.Dense(1, name="used")
        self.spare = keras.layers.Dense(1, name="spare")

    def call(self, x):
        return self.used(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self(x) - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        grads = [g * 0.5 for g in grads]  # a None gradient: TypeError
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


keras.utils.set_random_seed(3)
model = Net()
x = tf.random.stateless_normal((8, 3), seed=(1, 2))
y = tf.random.stateless_normal((8, 1), seed=(3, 4))
model(x)
model.spare(x)
model.compile(optimizer="sgd")
monitor = gradscope.keras.Monitor(every=1)
model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[monitor])
"""


@pytest.mark.filterwarnings(r"ignore:`build\(\)` was called on layer:UserWarning")
def test_a_custom_step_that_raises_on_a_none_gradient_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The step raises before it applies anything (``g * 0.5`` on a None): the Monitor
    reads its ``tape.gradient``, as ``run`` does, for the variables bare TensorFlow gives
    no gradient."""
    import keras
    import tensorflow as tf

    used, spare = keras.layers.Dense(1), keras.layers.Dense(1)
    x = tf.random.stateless_normal((8, 3), seed=(1, 2))
    used(x), spare(x)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(used(x) ** 2)
    grads = tape.gradient(loss, used.trainable_variables + spare.trainable_variables)
    assert [g is None for g in grads] == [False, False, True, True]
    with pytest.raises(TypeError) as bare:
        [g * 0.5 for g in grads]  # what the program's step raises unwatched

    program = tmp_path / "custom.py"
    program.write_text(CUSTOM, encoding="utf-8")
    names, raised = _run_program(program)
    assert (type(raised), str(raised)) == (TypeError, str(bare.value))
    said = capsys.readouterr().err
    assert f"fit at {names['monitor'].site} raised TypeError in step 1" in said
    assert "gives spare/kernel, spare/bias no gradient (disconnected)" in said
    found = names["monitor"].findings
    assert {f["variable"] for f in found} == {"spare/kernel", "spare/bias"}


FAILS_LATER = """\
import keras
import numpy as np
import tensorflow as tf

import gradscope.keras


class Net(keras.Model):
    def train_step(self, data):
        tf.debugging.check_numerics(self.trainable_variables[0], "weights not finite")  # a check
        return super().train_step(data)


keras.utils.set_random_seed(3)
inputs = keras.Input((3,))
model = Net(inputs, keras.layers.Dense(1, name="d")(inputs))
model.compile(optimizer="sgd", loss="mse")
x = np.random.RandomState(0).randn(24, 3).astype("float32")
y = np.random.RandomState(1).randn(24, 1).astype("float32")
x[12] = np.nan  # the second batch of eight: its gradient is NaN, so are the weights after it
monitor = gradscope.keras.Monitor(every=1, timeline=TIMELINE)
model.fit(x, y, epochs=1, batch_size=8, shuffle=False, verbose=0, callbacks=[monitor])
"""


def test_a_step_that_fails_later_keeps_the_steps_before_and_writes_the_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A NaN check fails step 3 (the weights step 2's NaN gradient made): the exception is
    the check's, steps 1 and 2 are recorded, the NaN finding of step 2 is said, and the
    timeline holding them is written when the fit raises (it was written only when the
    process ended: a notebook never had it; and nothing was said)."""
    import numpy as np
    import tensorflow as tf

    x = np.zeros((8, 3), "float32")
    x[4] = np.nan
    w = tf.Variable(tf.ones((3, 1)))
    with tf.GradientTape() as tape:  # bare TensorFlow: a NaN input gives a NaN gradient
        loss = tf.reduce_mean((tf.constant(x) @ w) ** 2)
    assert np.isnan(tape.gradient(loss, w).numpy()).any()

    program = tmp_path / "nan.py"
    timeline = tmp_path / "t.json"
    program.write_text(FAILS_LATER.replace("TIMELINE", repr(str(timeline))), encoding="utf-8")
    names, raised = _run_program(program)
    assert isinstance(raised, tf.errors.InvalidArgumentError)
    assert "weights not finite" in str(raised)
    said = capsys.readouterr().err
    site = names["monitor"].site
    assert (f"gradscope.keras.Monitor: fit at {site} raised InvalidArgumentError in step 3; "
            "the steps recorded before it show:\n") in said  # fmt: skip
    assert "\n  d/kernel: the gradient has a NaN or an infinity from step 2" in said
    written = json.loads(timeline.read_text())
    assert [s["step"] for s in written["steps"]] == [1, 2]
    assert written["steps"][1]["variables"]["d/kernel"]["status"] == "nan"
    assert [s["step"] for s in names["monitor"].steps] == [1, 2]
    assert not hasattr(names["model"], "_gradscope_monitor")


INTERRUPTED = """\
import keras
import numpy as np

import gradscope.keras


class Stop(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if batch == 1:
            raise KeyboardInterrupt  # Ctrl-C between steps


inputs = keras.Input((3,))
model = keras.Model(inputs, keras.layers.Dense(1, name="d")(inputs))
model.compile(optimizer="sgd", loss="mse")
x = np.random.RandomState(0).randn(32, 3).astype("float32")
y = np.random.RandomState(1).randn(32, 1).astype("float32")
monitor = gradscope.keras.Monitor(every=1)
model.fit(x, y, epochs=1, batch_size=8, verbose=0, callbacks=[monitor, Stop()])
"""


def test_a_fit_interrupted_between_steps_keeps_its_last_recorded_step(tmp_path: Path) -> None:
    """Ctrl-C after step 2: its record, made on the device, was collected only when step 3
    began, which never came; the Monitor had steps [1]."""
    program = tmp_path / "stop.py"
    program.write_text(INTERRUPTED, encoding="utf-8")
    names, raised = _run_program(program)
    assert isinstance(raised, KeyboardInterrupt)
    assert [s["step"] for s in names["monitor"].steps] == [1, 2]
