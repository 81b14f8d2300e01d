"""Keras 3 on JAX through every door, against bare TensorFlow and Keras on TensorFlow.

One child process with ``KERAS_BACKEND=jax`` (``programs/jax_doors.py``; the backend is read
at Keras' first import, so a backend is a process) walks the doors and prints what each
reported: the matrix of ``programs/keras_matrix.py`` under ``gradscope.watch()``,
``gradscope run`` of a Keras ``fit`` and of a plain JAX program, the ``Monitor``, the Python
targets, ``pytest --gradscope`` and ``%%gradscope``. This process (TensorFlow) runs the same
programs and targets, and bare TensorFlow says what each variable should get: None or not,
then ``ok``/``zero``/``nan`` from its value. JAX never answers None (it hands back zeros), so
its None-ness must come from gradscope's reading of the jaxpr: it is held to bare
TensorFlow's, and every status, cut point (op, kind, line) and cause to TensorFlow's report.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = [
    pytest.mark.tf,
    pytest.mark.skipif(
        importlib.util.find_spec("jax") is None,
        reason="JAX is not installed: pip install '.[jax]' (make demo installs it) to check "
        "Keras on JAX against Keras on TensorFlow",
    ),
]

PROGRAMS = Path(__file__).parent / "programs"
ROOT = Path(__file__).parents[3]
#: The JAX side's time limit (~35 s of CPU on an idle machine: imports, ~20 one-step fits).
LIMIT = 600


def _program(name: str) -> Any:
    sys.path.insert(0, str(PROGRAMS))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(PROGRAMS))


NAMES = list(_program("keras_matrix").PROGRAMS)


@pytest.fixture(scope="module")
def jax_side(tmp_path_factory: pytest.TempPathFactory) -> Iterator[subprocess.Popen[str]]:
    """The JAX side, started before the TensorFlow side runs so the two overlap."""
    out = tmp_path_factory.mktemp("jax_side")
    # XLA's optimizations off: they cost 60% of the side's time and change no status
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(ROOT),
           "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "jax_doors.py"), str(out)], cwd=str(ROOT), env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def jax(jax_side: subprocess.Popen[str], tensorflow: dict[str, Any]) -> dict[str, Any]:
    """What the JAX side reported (read once the TensorFlow side has run)."""
    try:
        out, err = jax_side.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        jax_side.kill()
        out, err = jax_side.communicate()
    assert jax_side.returncode == 0, err[-4000:]
    return dict(json.loads(out))


@pytest.fixture(scope="module")
def tensorflow(jax_side: subprocess.Popen[str]) -> dict[str, Any]:
    """The same programs and targets on TensorFlow, in this process."""
    import gradscope

    matrix = _program("keras_matrix")
    target = str(PROGRAMS / "jax_target.py") + ":build"
    return {
        "matrix": matrix.run_all(gradscope.watch),
        "inspect": gradscope.inspect(target).to_dict(),
        "diff": gradscope.diff(target, "main", "aux").to_dict(),
        "graph": gradscope.graph(target, loss="main"),
    }


def _bare(model: Any, x: Any, y: Any, loss: Any = None) -> dict[str, str]:
    """What bare TensorFlow gives each variable for the loss Keras' step differentiates:
    ``none`` or ``ok``/``zero``/``nan`` from its value; ``frozen`` when not trainable."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        value = loss(y, pred) if loss else model.compute_loss(x=x, y=y, y_pred=pred)
    grads = tape.gradient(value, model.trainable_variables)
    out = {v.path: "frozen" for v in model.variables}
    for v, g in zip(model.trainable_variables, grads, strict=True):
        out[v.path] = "none" if g is None else _status(np.asarray(tf.convert_to_tensor(g)))
    return out


def _status(values: np.ndarray[Any, Any]) -> str:
    values = values.astype(np.float64)
    return "nan" if not np.isfinite(values).all() else "zero" if not values.any() else "ok"


def _matrix_bare(name: str) -> dict[str, str]:
    import keras

    matrix = _program("keras_matrix")
    keras.backend.clear_session()
    matrix.seed(0)
    model, x, y = matrix.PROGRAMS[name]()
    return _bare(model, x, y, getattr(model, "step_loss", None))


def _holds(status: str, bare: str) -> bool:
    return status.startswith("none:") if bare == "none" else status == bare


def _sources(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (call,) = report["calls"]
    return dict(call["sources"])


def _cause(source: dict[str, Any]) -> tuple[Any, ...]:
    """A source's status, its cut points' op, kind and line, and its note's cause (the
    first clause: TensorFlow may add where the last path ends)."""
    cuts = tuple((c["op"], c["kind"], c["source"]) for c in source["cut_points"])
    return source["status"], cuts, source.get("note", "").split("; ")[0]


# -- the matrix: gradscope.watch() of 16 Keras programs on both backends ----------------------


@pytest.mark.parametrize("name", NAMES)
def test_matrix_jax_reports_what_tensorflow_reports(
    name: str, jax: dict[str, Any], tensorflow: dict[str, Any]
) -> None:
    tf_report, jax_report = tensorflow["matrix"][name], jax["matrix"][name]
    tf_sources, jax_sources = _sources(tf_report), _sources(jax_report)
    bare = _matrix_bare(name)
    for variable, source in tf_sources.items():  # TensorFlow's, against bare TensorFlow
        assert _holds(source["status"], bare[variable]), variable
    # JAX's: the same variables in the same order, each with the same status, cut points and
    # cause (JAX gave zeros for each none:*: its None-ness came from the jaxpr)
    assert list(jax_sources) == list(tf_sources)
    assert {v: _cause(s) for v, s in jax_sources.items()} == {
        v: _cause(s) for v, s in tf_sources.items()
    }
    (tf_call,), (jax_call,) = tf_report["calls"], jax_report["calls"]
    if tf_call["api"] == "fit":  # Keras' own step: the fit() line on both
        assert (jax_call["site"], jax_call["api"]) == (tf_call["site"], tf_call["api"])
    else:  # a custom train step: each backend's own gradient call, at its own line
        assert (tf_call["api"], jax_call["api"]) == ("GradientTape.gradient",
                                                     "jax.value_and_grad")  # fmt: skip
        assert jax_call["target"]["source"] == tf_call["target"]["source"]  # step_loss's line
    assert jax_report["backend"] == "jax" and jax_report["tensorflow"] == ""


def test_matrix_covers_every_cause(jax: dict[str, Any]) -> None:
    """The matrix holds each way a gradient is lost, and a healthy program."""
    seen = {s["status"] for r in jax["matrix"].values() for s in _sources(r).values()}
    assert {"ok", "frozen", "none:disconnected", "none:stopped",
            "none:nondifferentiable"} <= seen  # fmt: skip
    assert len(NAMES) >= 15


def test_jax_side_never_imports_tensorflow(jax: dict[str, Any]) -> None:
    """Every door on JAX ran without TensorFlow (the program imports none; nor does
    gradscope)."""
    assert jax["tensorflow_imported"] is False


# -- gradscope run: Keras' fit, a plain JAX program, the timeline -----------------------------


def test_run_of_a_keras_fit_on_jax(jax: dict[str, Any]) -> None:
    import keras

    fit = _program("jax_fit")
    keras.backend.clear_session()
    model, x, y = fit.build()
    bare = _bare(model, x, y)
    (call,) = jax["run_fit"]["calls"]
    lines = (PROGRAMS / "jax_fit.py").read_text().splitlines()

    def line(text: str) -> str:
        number = next(i for i, t in enumerate(lines, 1) if text in t)
        return f"{(PROGRAMS / 'jax_fit.py').relative_to(ROOT)}:{number}"

    assert (call["api"], call["mode"], call["site"]) == ("fit", "function", line("model.fit("))
    assert {n: s["status"].split(":")[0] for n, s in call["sources"].items()} == {
        n: b for n, b in bare.items() if b != "frozen"
    }
    body = call["sources"]["body/kernel"]
    assert [(c["op"], c["source"]) for c in body["cut_points"]] == [
        ("ArgMax", line("ops.argmax")), ("StopGradient", line("ops.stop_gradient")),
    ]  # fmt: skip
    assert call["sources"]["unused/kernel"]["note"] == (  # the compile() line, as on TensorFlow
        "reaches only output 'unused', which no loss reads (compile() at "
        f"{line('model.compile(')} gives it no loss)"
    )
    # what only JAX has: AdamW moved weights no gradient reaches, and the note names exactly
    # those a bare fit moved among the variables with none:*
    moved = [n for n in jax["moved"] if bare[n] == "none"]
    assert moved, "weight decay moves body/kernel on JAX"
    (note,) = [n for n in call["notes"] if "moved" in n]
    optimizer = "AdamW (weight_decay=0.1, beta_1=0.9)"
    assert note.startswith(f"{optimizer} moved " + ", ".join(moved[:4]))
    # a problem each (--allow-none allows the None, not the move), the optimizer named
    problems = jax["run_fit"]["problems"]
    assert sorted(p["variable"] for p in problems if p["kind"] == "moved-without-gradient") == (
        sorted(moved)
    )
    assert {n for n, s in call["sources"].items() if s.get("moved_by") == optimizer} == set(moved)
    assert {p["kind"] for p in problems} == {"unexpected-none", "moved-without-gradient"}


def _plain_bare() -> dict[str, bool]:
    """``jax_plain.py``'s loss written with TensorFlow: which parameters get None."""
    import tensorflow as tf

    rng = np.random.default_rng(0)
    p = {"aux/w": tf.Variable(rng.normal(size=(8, 3)).astype("float32")),
         "body/b": tf.Variable(np.zeros(8, "float32")),
         "body/w": tf.Variable(rng.normal(size=(4, 8)).astype("float32")),
         "head/w": tf.Variable(rng.normal(size=(8, 1)).astype("float32")),
         "scale": tf.Variable(1.0)}  # fmt: skip
    x, y = rng.normal(size=(16, 4)).astype("float32"), np.ones((16, 1), "float32")
    with tf.GradientTape() as tape:
        h = tf.tanh(x @ p["body/w"] + p["body/b"])
        pred = tf.stop_gradient(h) @ p["head/w"]
        loss = tf.reduce_mean((pred * tf.round(p["scale"]) - y) ** 2)
    return {n: g is None for n, g in zip(p, tape.gradient(loss, list(p.values())), strict=True)}


def test_run_of_a_plain_jax_program(jax: dict[str, Any]) -> None:
    report = jax["run_plain"]
    by_api = {c["api"]: c for c in report["calls"]}
    assert [(c["api"], c["mode"], c["step"]) for c in report["calls"]] == [
        ("jax.value_and_grad", "function", 1), ("jax.value_and_grad", "function", 2),
        ("jax.grad", "eager", 1), ("jax.vjp", "eager", 1),
    ]  # fmt: skip
    none = _plain_bare()
    grad = by_api["jax.grad"]
    # each leaf named by its pytree path, None-ness as bare TensorFlow's, norms as JAX's own
    assert list(grad["sources"]) == ["aux/w", "body/b", "body/w", "head/w", "scale"]
    for name, source in grad["sources"].items():
        assert source["status"].startswith("none:") == none[name], name
        if not none[name]:
            assert source["norm"] == pytest.approx(jax["bare_plain"][name], rel=1e-5)
    assert grad["sources"]["scale"]["cut_points"][0]["op"] == "Round"
    assert grad["sources"]["body/w"]["status"] == "none:stopped"
    assert by_api["jax.vjp"]["sources"]["w"]["status"] == "none:nondifferentiable"
    # the timeline of the compiled step, from jax.debug.callback
    steps = jax["timeline_plain"]["steps"]
    assert [s["step"] for s in steps if "step.py" not in s["site"]][:2] == [1, 2]
    assert steps[0]["variables"]["head/w"]["status"] == "ok"


def test_watching_changes_no_weight(jax: dict[str, Any]) -> None:
    """A fit watched by gradscope leaves the same bytes in every weight as one unwatched."""
    unwatched, watched = jax["weights"]
    assert unwatched == watched and len(unwatched) == 4


# -- the Monitor, pytest --gradscope, %%gradscope -------------------------------------------


def test_monitor_on_jax(jax: dict[str, Any]) -> None:
    monitor = jax["monitor"]
    assert [s["step"] for s in monitor["steps"]] == [1, 2, 4, 6, 8]
    first = monitor["steps"][0]["variables"]
    assert first["b/kernel"]["status"] == "none:disconnected"
    assert first["a/kernel"]["status"] == "ok" and first["a/kernel"]["weight_norm"] > 0
    assert {f["variable"] for f in monitor["findings"] if f["kind"] == "none"} == {
        "b/kernel", "b/bias",
    }  # fmt: skip
    assert monitor["file"]["steps"] == monitor["steps"]
    assert monitor["restored"]  # Keras' own train function back after the fit


def test_pytest_plugin_on_jax(jax: dict[str, Any]) -> None:
    found = jax["pytest"]
    assert found["exit"] == 1
    assert (
        "gradscope: 1 test watched, 1 gradient call; 1 failed: 2 unexpected-none"
        in (found["output"])
    )


def test_notebook_magic_on_jax(jax: dict[str, Any]) -> None:
    bare = _matrix_bare("argmax")
    sources = _sources(jax["magic"])
    assert {n: _holds(s["status"], bare[n]) for n, s in sources.items()} == dict.fromkeys(
        sources, True
    )
    assert sources["scores/kernel"]["cut_points"][0]["op"] == "ArgMax"


# -- Python targets: inspect, check, diff, graph ---------------------------------------------


def _pairs(report: dict[str, Any]) -> dict[tuple[str, str], tuple[Any, ...]]:
    return {(loss, v): _cause(p) for loss, x in report["losses"].items()
            for v, p in x["variables"].items()}  # fmt: skip


def test_targets_on_jax_report_what_tensorflow_reports(
    jax: dict[str, Any], tensorflow: dict[str, Any]
) -> None:
    tf_report, jax_report = tensorflow["inspect"], jax["targets"]["inspect"]
    assert _pairs(jax_report) == _pairs(tf_report)
    assert jax_report["problems"] == tf_report["problems"]
    assert jax_report["variables"] == tf_report["variables"]
    assert (jax_report["route"], jax_report["jax"]) == ("jax", jax["run_fit"]["jax"])
    assert jax["targets"]["check"] == [p for p in tf_report["problems"]]
    tf_diff, jax_diff = tensorflow["diff"]["diff"], jax["targets"]["diff"]["diff"]

    def reach(diff: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
        return {n: (v["reach"], v["status_a"], v["status_b"]) for n, v in diff["variables"].items()}

    assert reach(jax_diff) == reach(tf_diff)
    assert jax_diff["reach"] == tf_diff["reach"]


def test_graph_on_jax_cuts_where_tensorflow_cuts(
    jax: dict[str, Any], tensorflow: dict[str, Any]
) -> None:
    picture = tensorflow["graph"]
    boxes = {name for name, kind in jax["targets"]["graph"]["boxes"]}
    assert {b.name for b in picture.boxes if b.kind == "variable"} <= boxes
    assert {"body", "a", "b"} <= boxes  # one box per layer
    cut = [(s, d) for s, d, flow in jax["targets"]["graph"]["links"] if flow == "cut"]
    tf_cut = [(link.src, link.dst) for link in picture.links if link.flow == "cut"]
    assert len(cut) == len(tf_cut) == 1


def test_guide_shows_what_jax_reports(jax: dict[str, Any]) -> None:
    """The Keras-on-JAX guide's console block (``tests/docblocks.py`` leaves it to this test:
    it needs a JAX process) shows lines of the real report."""
    from tests import docblocks

    page = ROOT / "docs" / "guides" / "keras-jax.md"
    (command,) = [c for b in docblocks.blocks(page) for c in b.commands
                  if c.text.startswith("KERAS_BACKEND=jax gradscope run")]  # fmt: skip
    assert command.text in docblocks.NOT_RUN
    assert docblocks.missing(command.shown, jax["guide"]) == []


def test_jax_reports_follow_the_json_schemas(jax: dict[str, Any]) -> None:
    """The JSON a JAX run and a JAX target write is what ``schema/`` says (JAX's APIs, the
    ``backend``/``jax`` keys, route ``jax``, ``moved_by`` and its problem kind)."""
    jsonschema = pytest.importorskip("jsonschema")
    run_schema = json.loads((ROOT / "schema" / "run-v1.json").read_text(encoding="utf-8"))
    report_schema = json.loads((ROOT / "schema" / "report-v1.json").read_text(encoding="utf-8"))
    for name in ("run_fit", "run_plain"):
        jsonschema.validate(jax[name], run_schema)
        assert (jax[name]["backend"], jax[name]["tensorflow"]) == ("jax", "")
    for name in NAMES:  # watch() blocks: Keras' fit on JAX and a custom train step
        jsonschema.validate(jax["matrix"][name], run_schema)
    jsonschema.validate(jax["targets"]["inspect"], report_schema)
