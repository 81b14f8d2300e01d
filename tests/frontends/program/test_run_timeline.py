"""``gradscope run --steps N --every K --timeline FILE``: the records against bare TensorFlow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.frontends.python.frames import display_path
from tests.frontends.program.test_run import PROGRAMS, parts

pytestmark = pytest.mark.tf

NAMES = ("w1", "b1", "w2", "b2")


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _run(program: str, timeline: Path, *options: str) -> tuple[int, dict[str, Any]]:
    code, _, _ = _invoke("run", *options, "--timeline", str(timeline), str(PROGRAMS / program))
    return code, json.loads(timeline.read_text())


def reference(steps: int, every: int, dead: bool = False) -> dict[int, Any]:
    """The programs' arithmetic in bare TensorFlow: per recorded step, the loss and per
    variable (gradient norm, zero fraction, the variable's norm before the update)."""
    import tensorflow as tf

    x, y, weights = parts().mlp(dead)
    variables = [tf.Variable(v) for v in weights.values()]
    out = {}
    for step in range(1, steps + 1):
        w1, b1, w2, b2 = variables
        with tf.GradientTape() as tape:
            hidden = tf.nn.relu(x @ w1 + b1)
            loss = tf.reduce_mean(tf.square(hidden @ w2 + b2 - y))
        grads = tape.gradient(loss, variables)
        if step == 1 or step % every == 0:
            per = {}
            for name, g, v in zip(NAMES, grads, variables, strict=True):
                g64, v64 = g.numpy().astype(np.float64), v.numpy().astype(np.float64)
                per[name] = (np.linalg.norm(g64), np.mean(g64 == 0), np.linalg.norm(v64))
            out[step] = (float(loss), per)
        for v, g in zip(variables, grads, strict=True):
            v.assign_sub(0.05 * g)
    return out


def assert_matches(timeline: dict[str, Any], expected: dict[int, Any], program: str) -> None:
    assert [s["step"] for s in timeline["steps"]] == sorted(expected)
    site = f"{display_path(str(PROGRAMS / program))}:{_line(program)}"
    assert {s["site"] for s in timeline["steps"]} == {site}
    for record in timeline["steps"]:
        loss, per = expected[record["step"]]
        assert record["loss"] == pytest.approx(loss, rel=1e-5)
        assert set(record["variables"]) == set(NAMES)
        for name, (norm, zeros, weight) in per.items():
            got = record["variables"][name]
            assert got["status"] == "ok"
            assert got["norm"] == pytest.approx(norm, rel=1e-5)
            assert got["zero_fraction"] == pytest.approx(zeros)
            assert got["weight_norm"] == pytest.approx(weight, rel=1e-5)


def _line(program: str) -> int:
    lines = (PROGRAMS / program).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if "tape.gradient(" in line)


@pytest.mark.parametrize("program", ["timeline_eager.py", "timeline_function.py"])
def test_records_every_k_steps_match_bare_tensorflow(program: str, tmp_path: Path) -> None:
    code, timeline = _run(program, tmp_path / "t.json", "--steps", "20", "--every", "5")
    assert code == 0  # eager: stopped after 20 of its 30 steps; function: ran to its end
    assert timeline["every"] == 5 and timeline["program"] == str(PROGRAMS / program)
    assert_matches(timeline, reference(20, 5), program)
    assert timeline["findings"] == []  # a healthy network


def test_dying_relu_is_a_dead_finding_and_the_file_is_written_when_the_program_raises(
    tmp_path: Path,
) -> None:
    path = tmp_path / "dead.json"
    code, timeline = _run("timeline_dead.py", path, "--steps", "20", "--every", "5")
    assert code == 4  # the program raised after its loop
    expected = reference(20, 5, dead=True)
    assert_matches(timeline, expected, "timeline_dead.py")
    assert expected[1][1]["w1"][1] >= 0.9  # bare TensorFlow: w1's gradient mostly zero
    dead = {f["variable"]: f for f in timeline["findings"] if f["kind"] == "dead"}
    assert dead["w1"]["from_step"] == 1 and "dying ReLU" in dead["w1"]["message"]
    code, out, _ = _invoke("check", "--timeline", str(path))
    assert code == 1 and "dead" in out
    picture = tmp_path / "norms.png"
    assert _invoke("plot", str(path), "-o", str(picture))[0] == 0
    assert picture.read_bytes().startswith(b"\x89PNG")


def test_interrupted_program_still_writes_its_timeline(tmp_path: Path) -> None:
    code, timeline = _run("timeline_interrupted.py", tmp_path / "t.json", "--steps", "20",
                          "--every", "5")  # fmt: skip
    assert code == 130
    expected = reference(12, 5)
    assert_matches(timeline, {s: expected[s] for s in (1, 5, 10)}, "timeline_interrupted.py")


def test_every_without_a_timeline_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = _invoke("run", "--every", "5", str(PROGRAMS / "timeline_eager.py"))
    assert code == 2
    assert err.strip() == "gradscope run: --every needs --timeline FILE or --tensorboard DIR"
    code, _, err = _invoke("run", "--timeline", str(tmp_path), str(PROGRAMS / "timeline_eager.py"))
    assert code == 2 and "give a file path" in err


def test_model_fit_records_its_steps(tmp_path: Path) -> None:
    import tensorflow as tf

    code, timeline = _run("timeline_fit.py", tmp_path / "t.json", "--steps", "20", "--every", "5")
    assert code == 0
    helpers = parts()
    x, y, _ = helpers.mlp()
    layers = [tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)]
    model = helpers.seeded(tf.keras.Sequential([tf.keras.Input((4,)), *layers]), 8)
    opt = tf.keras.optimizers.SGD(0.05)
    expected = {}
    for step in range(1, 21):  # fit's steps: batches of 8 in order, 4 per epoch
        batch = slice(8 * ((step - 1) % 4), 8 * ((step - 1) % 4 + 1))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x[batch], training=True) - y[batch]))
        grads = tape.gradient(loss, model.trainable_variables)
        if step == 1 or step % 5 == 0:
            per = [(np.linalg.norm(g.numpy().astype(np.float64)),
                    np.linalg.norm(np.asarray(v).astype(np.float64)))
                   for g, v in zip(grads, model.trainable_variables, strict=True)]  # fmt: skip
            expected[step] = (float(loss), per)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    assert [s["step"] for s in timeline["steps"]] == [1, 5, 10, 15, 20]
    for record in timeline["steps"]:
        loss, per = expected[record["step"]]
        assert record["loss"] == pytest.approx(loss, rel=1e-5)
        got = list(record["variables"].values())
        assert [g["norm"] for g in got] == pytest.approx([n for n, _ in per], rel=1e-4)
        assert [g["weight_norm"] for g in got] == pytest.approx([w for _, w in per], rel=1e-5)
