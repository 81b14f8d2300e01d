"""``gradscope run``: a graph-mode gradient no ``Session.run`` computed has no step and no
numeric status (``unknown``); only its None-ness, certain from the graph, is reported.

TensorFlow 1 behaviour cannot be undone in a process: one subprocess runs the program
watched, then unwatched, and computes what the never-run gradients would have been."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Processes
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = "graph_never_run.py"


def _driver() -> None:
    """In the subprocess: the report, and bare TensorFlow's values of every call."""
    import contextlib
    import io
    import runpy

    import tensorflow.compat.v1 as tf

    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    with contextlib.redirect_stdout(io.StringIO()):
        report = run(Program(str(PROGRAMS / PROGRAM), ())).report.to_dict()
        tf.reset_default_graph()
        g = runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    truth = {}
    with tf.Session(graph=g["tf"].get_default_graph()) as sess:
        sess.run(tf.global_variables_initializer())
        for name in ("ran", "never", "never_none"):
            truth[name] = [None if x is None else float(sess.run(x)) for x in g[name]]
    print(json.dumps({"report": report, "truth": truth}))


@pytest.fixture(scope="module")
def result(python_processes: Processes) -> dict[str, Any]:
    code = "from tests.frontends.program.test_graph_never_run import _driver; _driver()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = python_processes(["-c", code], ROOT, env, kill_after=300)  # a process of its own
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _call(result: dict[str, Any], text: str) -> dict[str, Any]:
    (call,) = [c for c in result["report"]["calls"]
               if c["site"].endswith(f":{line_of(PROGRAM, text)}")]  # fmt: skip
    return call  # type: ignore[no-any-return]


def test_run_call_has_its_values(result) -> None:
    call = _call(result, "ran = tf.gradients")
    assert result["truth"]["ran"] == [0.0, 0.0]
    assert call["step"] == 1
    assert [s["status"] for s in call["sources"].values()] == ["zero", "zero"]


def test_never_run_call_is_unknown_with_no_step(result) -> None:
    call = _call(result, "never = tf.gradients")
    assert result["truth"]["never"] == [0.0, 0.0]  # what gradscope cannot know: not "ok"
    assert call["step"] == 0 and call["target"]["value"] is None
    assert [(s["status"], s["norm"]) for s in call["sources"].values()] == [("unknown", None)] * 2
    assert any("never run" in note for note in call["notes"])


def test_never_run_none_is_still_reported(result) -> None:
    call = _call(result, "never_none = tf.gradients")
    w_value, b_value = result["truth"]["never_none"]
    assert w_value is not None and b_value is None
    statuses = {n: s["status"] for n, s in call["sources"].items()}
    assert statuses == {"w": "unknown", "b": "none:nondifferentiable"}
    (cut,) = call["sources"]["b"]["cut_points"]
    assert cut["op"] == "ArgMax" and cut["source"].endswith(f":{line_of(PROGRAM, 'tf.argmax')}")


def test_never_run_report_holds_to_the_schema(result) -> None:
    from tests.cli.test_run import _validate

    _validate(result["report"])
