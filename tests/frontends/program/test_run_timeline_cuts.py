"""``gradscope run --timeline/--tensorboard`` on a program with a cut gradient at two sites:
the records' causes, ``--allow-none``, ``weight_norm`` and the TensorBoard tags (and events
from a TensorFlow 1 program), against bare TensorFlow computing the same steps."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.frontends.python.frames import display_path
from tests.conftest import Processes
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

PROGRAM = "timeline_cut.py"
RECORDED = [1, 3, 6, 9, 12]  # --steps 12 --every 3: the first and every third


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _site(text: str) -> str:
    return f"{display_path(str(PROGRAMS / PROGRAM))}:{line_of(PROGRAM, text)}"


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    """One run with a timeline and TensorBoard, no --allow-none."""
    out = tmp_path_factory.mktemp("cut")
    code, _, _ = _invoke("run", "--steps", "12", "--every", "3", "--timeline",
                         str(out / "t.json"), "--tensorboard", str(out / "tb"),
                         str(PROGRAMS / PROGRAM))  # fmt: skip
    return code, json.loads((out / "t.json").read_text()), out / "tb"


@pytest.fixture(scope="module")
def reference() -> dict[str, dict[int, dict[str, Any]]]:
    """The program's two loops in bare TensorFlow: per site and recorded step, per variable
    the gradient (None where TensorFlow gives none) and the value it was computed at."""
    import tensorflow as tf

    rng = np.random.RandomState(0)
    x = tf.constant(rng.randn(8, 4).astype("float32"))
    y = tf.constant(rng.randn(8, 1).astype("float32"))
    gen, disc = (tf.Variable(rng.randn(*s).astype("float32")) for s in ((4, 4), (4, 1)))
    w = tf.Variable(rng.randn(4, 3).astype("float32"))
    b = tf.Variable(tf.zeros([3]))
    w2, head = (tf.Variable(rng.randn(3, 1).astype("float32")) for _ in range(2))
    out: dict[str, dict[int, dict[str, Any]]] = {"disc": {}, "loop": {}}
    for step in range(1, 13):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.softplus(tf.stop_gradient(x @ gen) @ disc))
        grads = tape.gradient(loss, [disc, gen])
        if step in RECORDED:
            out["disc"][step] = {"disc/w": (grads[0].numpy(), disc.numpy()),
                                 "gen/w": (grads[1], gen.numpy())}  # fmt: skip
        disc.assign_sub(0.1 * grads[0])
        with tf.GradientTape() as tape:
            h = tf.tanh(x @ w + b)
            side = h @ head if step <= 5 else tf.stop_gradient(h @ head)
            loss = tf.reduce_mean((h @ w2 - y) ** 2) + tf.reduce_mean(side**2)
        variables = {"w": w, "b": b, "w2": w2, "head": head}
        grads = tape.gradient(loss, list(variables.values()))
        if step in RECORDED:
            pairs = zip(variables.items(), grads, strict=True)
            out["loop"][step] = {n: (None if g is None else g.numpy(), v.numpy())
                                 for (n, v), g in pairs}  # fmt: skip
        for v, g in zip(variables.values(), grads, strict=True):
            if g is not None:
                v.assign_sub(0.1 * g)
    return out


def _norm(array: Any) -> float:
    return float(np.linalg.norm(np.asarray(array, dtype=np.float64)))


def test_records_match_bare_tensorflow_and_name_the_cut(
    watched: tuple[int, dict[str, Any], Path], reference: dict[str, dict[int, dict[str, Any]]]
) -> None:
    code, timeline, _ = watched
    assert code == 1  # gen/w and head get no gradient, no --allow-none
    sites = {"disc": _site("tape.gradient(loss, [disc, gen])"),
             "loop": _site("tape.gradient(loss, [w, b, w2, head])")}  # fmt: skip
    cuts = {"disc": _site("fake = tf.stop_gradient"), "loop": _site("else tf.stop_gradient")}
    for key, site in sites.items():
        records = {r["step"]: r for r in timeline["steps"] if r["site"] == site}
        assert sorted(records) == RECORDED
        for step, per in reference[key].items():
            got = records[step]["variables"]
            assert set(got) == set(per)
            for name, (grad, value) in per.items():
                record = got[name]
                # weight_norm: the value the gradient was computed at (before the update)
                assert record["weight_norm"] == pytest.approx(_norm(value), rel=1e-5)
                if grad is not None:
                    assert record["status"] == "ok" and "cause" not in record
                    assert record["norm"] == pytest.approx(_norm(grad), rel=1e-5)
                    continue
                assert record["status"] == "none:stopped" and record["norm"] is None
                cut = {"node": "StopGradient", "op": "StopGradient", "kind": "stopped",
                       "source": cuts[key]}  # fmt: skip
                assert record["cut_points"] == [cut]
                assert record["cause"] == f"cut at StopGradient (StopGradient) at {cuts[key]}"
                assert "allowed" not in record
    assert reference["loop"][1]["b"][1].any() == False  # noqa: E712  b starts at 0
    first = next(r for r in timeline["steps"] if r["site"] == sites["loop"])
    assert first["variables"]["b"]["weight_norm"] == 0.0


def test_findings_name_the_cut_and_no_vanishing_from_a_zero_weight(
    watched: tuple[int, dict[str, Any], Path],
) -> None:
    _, timeline, _ = watched
    found = {(f["variable"], f["kind"]): f for f in timeline["findings"]}
    assert set(found) == {("gen/w", "none"), ("head", "none")}  # b's weight norm 0: no vanishing
    head = found[("head", "none")]
    assert head["from_step"] == 6
    assert head["cut_points"][0]["source"] == _site("else tf.stop_gradient")
    assert head["message"].endswith(f"none:stopped, cut at StopGradient (StopGradient) at "
                                    f"{_site('else tf.stop_gradient')}")  # fmt: skip
    assert found[("gen/w", "none")]["from_step"] == 1


def test_allow_none_travels_with_the_timeline_and_check_agrees(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    code, _, _ = _invoke("run", "--steps", "12", "--every", "3", "--allow-none", "gen/*",
                         "--allow-none", "head", "--timeline", str(path),
                         str(PROGRAMS / PROGRAM))  # fmt: skip
    assert code == 0
    timeline = json.loads(path.read_text())
    assert timeline["allow_none"] == ["gen/*", "head"]
    assert timeline["findings"] == []
    nones = [(r["step"], n, v) for r in timeline["steps"] for n, v in r["variables"].items()
             if v["status"].startswith("none")]  # fmt: skip
    assert {(s, n) for s, n, _ in nones} == {(s, "gen/w") for s in RECORDED} | {
        (s, "head") for s in (6, 9, 12)
    }
    assert all(v["allowed"] is True for _, _, v in nones)
    code, out, _ = _invoke("check", "--timeline", str(path), "--format", "json")
    assert code == 0 and json.loads(out)["problems"] == []
    code, _, _ = _invoke("run", "--steps", "12", "--every", "3", "--allow-none", "gen/*",
                         "--timeline", str(path), str(PROGRAMS / PROGRAM))  # fmt: skip
    assert code == 1  # head is not allowed: run and check both fail on it
    code, out, _ = _invoke("check", "--timeline", str(path), "--format", "json")
    assert code == 1 and [p["variable"] for p in json.loads(out)["problems"]] == ["head"]


def _events(directory: Path) -> dict[str, dict[int, tuple[str, Any]]]:
    """tag -> step -> (plugin, value), read back with TensorFlow's own event reader."""
    import tensorflow as tf

    out: dict[str, dict[int, tuple[str, Any]]] = defaultdict(dict)
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                out[value.tag][event.step] = (plugin, tf.make_ndarray(value.tensor))
    return out


def test_tensorboard_tags_are_stable_per_site_and_every_site_has_histograms(
    watched: tuple[int, dict[str, Any], Path], reference: dict[str, dict[int, dict[str, Any]]]
) -> None:
    _, _, board = watched
    events = _events(board)
    sites = {"disc": _site("tape.gradient(loss, [disc, gen])"),
             "loop": _site("tape.gradient(loss, [w, b, w2, head])")}  # fmt: skip
    assert all(tag.startswith((sites["disc"] + "/", sites["loop"] + "/")) for tag in events)
    for key, site in sites.items():
        for step, per in reference[key].items():
            for name, (grad, _) in per.items():
                norm = events[f"{site}/gradients/norm/{name}"].get(step)
                histogram = events[f"{site}/gradients/{name}"].get(step)
                if grad is None:
                    assert norm is None and histogram is None
                    continue
                assert norm is not None and norm[0] == "scalars"
                assert float(norm[1]) == pytest.approx(_norm(grad), rel=1e-5)
                assert histogram is not None and histogram[0] == "histograms"
                rows = histogram[1]  # [left edge, right edge, count]: traced sites too
                assert rows[:, 2].sum() == grad.size
                assert rows[0, 0] == pytest.approx(float(grad.min()), rel=1e-5, abs=1e-12)
                assert rows[-1, 1] == pytest.approx(float(grad.max()), rel=1e-5, abs=1e-12)
    ratio = events[f"{sites['loop']}/gradients/ratio/b"]
    assert 1 not in ratio and sorted(ratio) == RECORDED[1:]  # b's weight norm is 0 at step 1


def test_tensorboard_of_a_tensorflow_1_program(
    gradscope_processes: Processes, tmp_path: Path
) -> None:
    """A program with TensorFlow 1 behaviour (no eager, so no ``tf.summary`` writer) gets its
    events too; in a process of its own (forked from one that imported TensorFlow), since
    ``disable_v2_behavior`` cannot be undone."""
    import os

    import tensorflow as tf

    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = gradscope_processes(["run", "--steps", "4", "--tensorboard", str(tmp_path / "tb"),
                                "timeline_tf1.py"], PROGRAMS, env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    x = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
    w, b = tf.Variable([[0.5]]), tf.Variable([0.0])
    events = _events(tmp_path / "tb")
    site = f"timeline_tf1.py:{line_of('timeline_tf1.py', 'tf.gradients(')}"
    for step in range(1, 5):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ w + b - (3 * x + 1)))
        grads = tape.gradient(loss, [w, b])
        assert float(events[f"{site}/loss"][step][1]) == pytest.approx(float(loss), rel=1e-5)
        for name, grad in zip("wb", grads, strict=True):
            norm = events[f"{site}/gradients/norm/{name}"][step][1]
            assert float(norm) == pytest.approx(_norm(grad), rel=1e-5)
            assert events[f"{site}/gradients/{name}"][step][1][:, 2].sum() == 1
        w.assign_sub(0.1 * grads[0])
        b.assign_sub(0.1 * grads[1])
