"""One bug, one answer, whatever the door (issue 29, points 3 and 4): one variable is one
problem; a timeline carries every problem its run reported and ``check --timeline`` exits as
the run did. References: bare TensorFlow's None gradients, and the run's own exit code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli.test_run import _invoke, _program
from tests.conftest import Processes

pytestmark = pytest.mark.tf

UNREAD_HEAD = """\
import keras
import tensorflow as tf

inputs = keras.Input((4,))
hidden = keras.layers.Dense(8, name="body")(inputs)
model = keras.Model(inputs, [keras.layers.Dense(1, name="main_head")(hidden),
                             keras.layers.Dense(2, name="aux_head")(hidden)], name="detector")
x = tf.ones((2, 4))


def loss():
    return tf.reduce_sum(model(x)[0])


def build():
    return {"losses": {"main": loss}, "expect": {"main": {"connected": ["*"]}}}
"""


def _bare_none(folder: Path, file: str = "unread_head.py") -> set[str]:
    """The variables of the file's ``model`` bare TensorFlow gives no gradient from its
    ``loss()``."""
    import importlib.util

    import tensorflow as tf

    spec = importlib.util.spec_from_file_location(f"{file[:-3]}_bare", folder / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    variables = module.model.trainable_variables
    with tf.GradientTape() as tape:
        value = module.loss()
    grads = tape.gradient(value, variables)
    return {v.path for v, g in zip(variables, grads, strict=True) if g is None}


def test_check_reports_one_problem_per_variable(run_cli, tmp_path: Path) -> None:
    (tmp_path / "unread_head.py").write_text(UNREAD_HEAD, encoding="utf-8")
    none = _bare_none(tmp_path)
    assert none == {"aux_head/kernel", "aux_head/bias"}  # the head no loss reads
    result = run_cli("check", "unread_head.py:build", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)  # one target: the report's own shape
    named = [p["variable"] for p in report["problems"]]
    assert sorted(named) == sorted(none)  # each once: never unexpected-none and never-trained
    assert {p["kind"] for p in report["problems"]} == {"unexpected-none"}


def test_run_timeline_carries_the_runs_problems(tmp_path: Path) -> None:
    timeline = tmp_path / "t.json"
    code, out, _ = _invoke("--timeline", str(timeline), "--format", "json", "--output", "-",
                           _program("refreeze.py"))  # fmt: skip
    run = json.loads(out[out.index("{\n") :])
    assert code == 1 and run["problems"]  # a frozen layer the traced step still trains
    findings = json.loads(timeline.read_text())["findings"]
    held = {(f["site"], f["variable"], f["kind"]) for f in findings}
    assert {(p["site"], p["variable"], p["kind"]) for p in run["problems"]} <= held
    from click.testing import CliRunner

    from gradscope._src.cli import main

    checked = CliRunner().invoke(main, ["check", "--timeline", str(timeline)])
    assert checked.exit_code == code, checked.output


TF1_VAR_LIST = """\
import json
import sys

import tensorflow as tf

tf.compat.v1.disable_eager_execution()
x = tf.compat.v1.placeholder(tf.float32, [None, 4])
body = tf.compat.v1.get_variable("body", [4, 8])
h = tf.matmul(x, body)
task1 = tf.compat.v1.get_variable("task1", [8, 3])
task2 = tf.compat.v1.get_variable("task2", [8, 3])
loss1 = tf.reduce_mean(tf.matmul(h, task1))
loss2 = tf.reduce_mean(tf.matmul(h, task2))
opt = tf.compat.v1.train.GradientDescentOptimizer(0.1)
pairs = opt.compute_gradients(loss1, var_list=[body, task1, task2])
print("BARE" + json.dumps({"none": [v.name[:-2] for g, v in pairs if g is None],
                           "loss2": [loss2.op.name, loss2.op.type]}), file=sys.stderr)
"""


def test_run_tf1_disconnected_variable_says_what_it_feeds(
    gradscope_processes: Processes, python_processes: Processes, tmp_path: Path
) -> None:
    """compute_gradients(loss1, var_list=[..., task2]): task2 feeds only loss2. The row's
    cause says so, at loss2's line (it was empty: issue 29). (``gradscope run`` is a process
    of its own, forked from the session's driver: a TF1 program's graph mode is its own.)"""
    program = tmp_path / "tf1_var_list.py"
    program.write_text(TF1_VAR_LIST, encoding="utf-8")
    bare = run_python(python_processes, program)
    assert bare["none"] == ["task2"]  # bare TensorFlow: no gradient for task2 only
    done = gradscope_processes(["run", "--format", "json", "--output", "-", str(program)],
                               tmp_path, os.environ)  # fmt: skip
    assert done.returncode == 1, done.stderr  # a None gradient no --allow-none names
    out = done.stdout
    report = json.loads(out[out.index("{\n") :])
    (call,) = report["calls"]
    none = [n for n, s in call["sources"].items() if s["status"].startswith("none")]
    assert none == bare["none"]
    line = TF1_VAR_LIST.splitlines().index(
        "loss2 = tf.reduce_mean(tf.matmul(h, task2))") + 1  # fmt: skip
    name, op = bare["loss2"]
    note = call["sources"]["task2"]["note"]
    assert note == f"the loss never reads it: it feeds only {name} ({op}) at {program.name}:{line}"
    assert "unless given" not in call["sources"]["task2"]["fix"]["text"]  # it was given one


def run_python(python_processes: Processes, program: Path) -> dict:
    """The program as Python runs it, unwatched (a process of its own, forked): what bare
    TensorFlow returned."""
    done = python_processes([str(program)], program.parent, os.environ, kill_after=120)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("BARE"))
    return json.loads(line[4:])


SKIPPED_LAYER = """\
import keras
import tensorflow as tf


class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.a = keras.layers.Dense(4, name="a")
        self.unused = keras.layers.Dense(4, name="unused")
        self.out = keras.layers.Dense(1, name="out")

    def call(self, x):
        return self.out(self.a(x))  # self.unused is never called


model = Net()
x = tf.ones((2, 3))
model(x)
model.unused(tf.ones((2, 4)))  # built, but on no path of call()


def loss():
    return tf.reduce_sum(model(x))


def build():
    return {"losses": {"main": loss}, "variables": model.trainable_variables}


if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    tape.gradient(value, model.trainable_variables)
"""

PROGRAM_TAIL = """

if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    tape.gradient(value, model.trainable_variables)
"""


def _notes(run_cli, folder: Path, script: str) -> tuple[dict[str, str], dict[str, str]]:
    """The cause of each disconnected variable: check's (a target) and run's (a program)."""
    checked = run_cli("check", f"{script}:build", "--format", "json", cwd=folder)
    assert checked.returncode == 1, checked.stderr
    (loss,) = json.loads(checked.stdout)["losses"].values()
    inspected = {n: p.get("note", "") for n, p in loss["variables"].items()
                 if p["status"] == "none:disconnected"}  # fmt: skip
    code, out, _ = _invoke("--format", "json", "--output", "-", str(folder / script))
    assert code == 1  # the run fails on the same None gradients
    (call,) = json.loads(out[out.index("{\n") :])["calls"]
    ran = {
        n: s.get("note", "").replace(f"{folder}{os.sep}", "")
        for n, s in call["sources"].items()
        if s["status"] == "none:disconnected"
    }  # fmt: skip  (run was given the full path)
    return inspected, ran


def test_check_of_a_target_names_the_unread_output_as_run_does(run_cli, tmp_path: Path) -> None:
    (tmp_path / "unread_head.py").write_text(UNREAD_HEAD + PROGRAM_TAIL, encoding="utf-8")
    none = _bare_none(tmp_path)
    inspected, ran = _notes(run_cli, tmp_path, "unread_head.py")
    assert set(inspected) == set(ran) == none
    line = UNREAD_HEAD.splitlines().index("    return tf.reduce_sum(model(x)[0])") + 1
    said = ("reaches only output 'aux_head' of model 'detector', which the loss made at "
            f"unread_head.py:{line} does not read")  # fmt: skip
    assert set(inspected.values()) == set(ran.values()) == {said}  # the same words, same line


STOPPED_BODY = """\
import keras
import tensorflow as tf

inputs = keras.Input((4,))
hidden = keras.layers.Dense(8, name="body")(inputs)
box = keras.layers.Dense(4, name="box_head")(keras.ops.stop_gradient(hidden))
model = keras.Model(inputs, [keras.layers.Dense(3, name="cls_head")(hidden), box], name="net")
x = tf.ones((2, 4))


def loss():
    cls, box = model(x, training=True)
    return tf.reduce_mean(box**2)


def build():
    return {"losses": {"box": loss}}
"""


def test_a_cut_inside_a_keras_model_is_at_the_same_line_through_every_door(
    run_cli, tmp_path: Path
) -> None:
    """A ``keras.ops.stop_gradient`` inside a functional model: inspect of the target named
    no line for the cut (gradscope's own wrapper of Keras' model call stood between the op and
    the user's line), ``gradscope run`` the line that calls the model; both now name the line
    that wrote it (``keras_ops.py``)."""
    (tmp_path / "stopped.py").write_text(STOPPED_BODY + PROGRAM_TAIL, encoding="utf-8")
    none = _bare_none(tmp_path, "stopped.py")
    assert none == {"body/kernel", "body/bias", "cls_head/kernel", "cls_head/bias"}
    inspected = run_cli("inspect", "stopped.py:build", "--format", "json", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    pairs = json.loads(inspected.stdout)["losses"]["box"]["variables"]
    code, out, _ = _invoke("--format", "json", "--output", "-", str(tmp_path / "stopped.py"))
    assert code == 1
    (call,) = json.loads(out[out.index("{\n") :])["calls"]
    line = _line(STOPPED_BODY, "keras.ops.stop_gradient(hidden)")
    ran = {
        n: json.loads(json.dumps(s).replace(f"{tmp_path}{os.sep}", ""))
        for n, s in call["sources"].items()
    }  # fmt: skip  (run was given the full path)
    for name in ("body/kernel", "body/bias"):
        for door in (pairs[name], ran[name]):
            assert door["status"] == "none:stopped"
            assert [c["source"] for c in door["cut_points"]] == [f"stopped.py:{line}"]
    for name in ("cls_head/kernel", "cls_head/bias"):
        assert pairs[name]["note"] == ran[name]["note"]


def test_check_of_a_target_names_the_skipped_layer_as_run_does(run_cli, tmp_path: Path) -> None:
    (tmp_path / "skipped.py").write_text(SKIPPED_LAYER, encoding="utf-8")
    none = _bare_none(tmp_path, "skipped.py")
    inspected, ran = _notes(run_cli, tmp_path, "skipped.py")
    assert set(inspected) == set(ran) == none == {"unused/kernel", "unused/bias"}
    said = ("reaches no output of model 'net': its layer is not on the path from the model's "
            "inputs to its outputs")  # fmt: skip
    assert set(inspected.values()) == set(ran.values()) == {said}


def test_two_copies_of_a_target_each_name_their_own_lines(run_cli, tmp_path: Path) -> None:
    """Two copies of one file inspected in one process (a broken model and its fixed copy,
    in a notebook): TensorFlow's autograph caches conversions by code object, which two
    copies share, so the second's cut points named the first copy's file."""
    line = _line(STOPPED_BODY, "keras.ops.stop_gradient(hidden)")
    for copy in ("a", "b"):
        (tmp_path / copy).mkdir()
        (tmp_path / copy / "stopped.py").write_text(STOPPED_BODY, encoding="utf-8")
    for copy in ("a", "b"):
        done = run_cli("inspect", f"{copy}/stopped.py:build", "--format", "json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        pair = json.loads(done.stdout)["losses"]["box"]["variables"]["body/kernel"]
        assert [c["source"] for c in pair["cut_points"]] == [f"{copy}/stopped.py:{line}"]


def _line(text: str, part: str) -> int:
    (line,) = [n for n, x in enumerate(text.splitlines(), 1) if part in x]
    return line


def test_the_monitor_names_the_line_that_wrote_a_keras_op(tmp_path: Path) -> None:
    """Through ``fit`` the op's stack holds only Keras and the ``fit`` line: the Monitor
    named no line for the cut, ``gradscope run`` the ``fit`` line. The Keras operation's own
    line is the one to change."""
    import importlib.util

    import tensorflow as tf

    from gradscope.keras import Monitor  # before the model is built, as a program imports it

    (tmp_path / "stopped_fit.py").write_text(STOPPED_BODY, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(
        "stopped_fit_monitor", tmp_path / "stopped_fit.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.model
    model.compile(optimizer="sgd", loss=[None, "mse"])
    x, y = tf.ones((4, 4)), tf.zeros((4, 4))
    with tf.GradientTape() as tape:  # bare TensorFlow: what the compiled loss reaches
        value = tf.reduce_mean((model(x, training=True)[1] - y) ** 2)
    grads = tape.gradient(value, model.trainable_variables)
    none = {v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None}
    assert {"body/kernel", "body/bias"} <= none
    timeline = tmp_path / "t.json"
    model.fit(x, [tf.zeros((4, 3)), y], epochs=1, verbose=0,
              callbacks=[Monitor(every=1, timeline=str(timeline))])  # fmt: skip
    findings = json.loads(timeline.read_text())["findings"]
    cut = {f["variable"]: f.get("cut_points", []) for f in findings if f["kind"] == "none"}
    line = _line(STOPPED_BODY, "keras.ops.stop_gradient(hidden)")
    for name in ("body/kernel", "body/bias"):
        assert [c["source"].rsplit(os.sep, 1)[-1] for c in cut[name]] == [f"stopped_fit.py:{line}"]
