"""The seed questions' TensorFlow 1 programs under ``gradscope run``, against bare TensorFlow.

TensorFlow 1 behaviour (``disable_v2_behavior``) cannot be undone in a process, so one
subprocess runs every program watched, then unwatched, and computes the references in the
program's own graph with a fresh session (seeded initializers give the same first values).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import Processes
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[3]
SEEDS = ("seed000_multitask.py", "seed001_chained_heads.py", "seed004_stop_gradient.py")
QUIET = ("tf1_var_list_quiet.py",)


def _reference(name: str, g: dict[str, Any]) -> dict[str, Any]:
    """Bare TensorFlow 1: the grads each call returned (None or not) and their first values."""
    import tensorflow.compat.v1 as tf

    graphs = {
        "seed000_multitask.py": lambda: [
            ("compute_gradients", g["grads_and_vars"], {g["x"]: g["data"]})
        ],
        "seed001_chained_heads.py": lambda: [
            ("compute_gradients", g["grads_vars"], g["feed_dict_v"]),
            ("compute_gradients", g["grads_vars2"], g["feed_dict_v"]),
            ("compute_gradients", g["grads_all"], None),
        ],
        "seed004_stop_gradient.py": lambda: [
            ("minimize", None, None),
            (
                "tf.gradients",
                g["gradients_node"],
                {g["x_input"]: g["x_train"][0], g["y_input"]: g["y_train"][0]},
            ),
            ("tf.gradients", g["gradients"], None),
            ("tf.gradients", g["gradients2"], None),
            ("tf.gradients", g["g3"], None),
        ],
    }[name]()
    out = []
    with tf.Session(graph=g["tf"].get_default_graph()) as sess:
        sess.run(tf.global_variables_initializer())
        for api, grads, feed in graphs:
            if grads is None:
                out.append({"api": api})
                continue
            grads = [p[0] if isinstance(p, tuple) else p for p in grads]
            present = [x for x in grads if x is not None]
            values = sess.run(present, feed_dict=feed) if feed is not None else None
            numbers = iter(values or [])
            out.append({"api": api, "none": [x is None for x in grads],
                        "sparse": [isinstance(x, tf.IndexedSlices) for x in grads],
                        "norms": [None if x is None or values is None else
                                  _norm(next(numbers)) for x in grads]})  # fmt: skip
        if name == "seed001_chained_heads.py":  # which variables its training moves
            variables = tf.trainable_variables()
            before = sess.run(variables)
            for _ in range(2):
                sess.run(g["train_op"], feed_dict=g["feed_dict_v"])
            moved = {
                v.op.name: bool(np.any(a != b))
                for v, a, b in zip(variables, before, sess.run(variables), strict=True)
            }
    return {"calls": out, **({"moved": moved} if name == "seed001_chained_heads.py" else {})}


def _norm(value: Any) -> float:
    indices = getattr(value, "indices", None)
    if indices is not None:  # IndexedSlicesValue: sum repeated rows, as densifying does
        dense = np.zeros(value.dense_shape, np.float64)
        np.add.at(dense, value.indices, value.values)
        return float(np.linalg.norm(dense))
    return float(np.linalg.norm(value))


def _driver() -> None:
    """In the subprocess: every seed watched, then unwatched with its references."""
    import contextlib
    import io
    import runpy

    import tensorflow.compat.v1 as tf

    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    results = {}
    for name in SEEDS:
        path = str(PROGRAMS / name)
        tf.reset_default_graph()
        watched_out = io.StringIO()
        with contextlib.redirect_stdout(watched_out):
            outcome = run(Program(path, ()))
        tf.reset_default_graph()
        plain_out = io.StringIO()
        with contextlib.redirect_stdout(plain_out):
            g = runpy.run_path(path, run_name="__main__")
        results[name] = {"report": outcome.report.to_dict(), "reference": _reference(name, g),
                         "same_output": watched_out.getvalue() == plain_out.getvalue()}  # fmt: skip
    for name in QUIET:  # the report only, and the output against python's
        path = str(PROGRAMS / name)
        watched_out, plain_out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(watched_out):
            outcome = run(Program(path, ()))
        with contextlib.redirect_stdout(plain_out):
            runpy.run_path(path, run_name="__main__")
        results[name] = {"report": outcome.report.to_dict(),
                         "same_output": watched_out.getvalue() == plain_out.getvalue()}  # fmt: skip
    print(json.dumps(results))


@pytest.fixture(scope="module")
def seeds(python_processes: Processes) -> dict[str, Any]:
    code = "from tests.frontends.program.test_seeds_tf1 import _driver; _driver()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = python_processes(["-c", code], ROOT, env, kill_after=300)  # a process of its own
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def _check_calls(result: dict[str, Any], never_run: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """Every reference call against the report's call of the same order: None-ness, sparse
    flags, norms (where the program's Session.run computed them); the calls ``never_run``
    (by index: no Session.run computed them) have no step (0)."""
    calls = result["report"]["calls"]
    references = result["reference"]["calls"]
    assert [c["api"] for c in calls] == [r["api"] for r in references]
    for i, (call, ref) in enumerate(zip(calls, references, strict=True)):
        assert call["mode"] == "graph" and call["step"] == (0 if i in never_run else 1)
        if "none" not in ref:
            continue
        sources = list(call["sources"].values())
        assert [s["status"].startswith("none:") for s in sources] == ref["none"]
        assert [s["sparse"] for s in sources] == ref["sparse"]
        for s, norm in zip(sources, ref["norms"], strict=True):
            if norm is not None:
                assert s["norm"] == pytest.approx(norm, rel=1e-5)
    assert result["same_output"], "watching changed what the program printed"
    return calls  # type: ignore[no-any-return]


def test_seed000_compute_gradients_returns_none_for_the_other_task(seeds) -> None:
    calls = _check_calls(seeds["seed000_multitask.py"])
    (call,) = calls
    assert call["site"].endswith(
        f":{line_of('seed000_multitask.py', '= optimizer.compute_gradients(loss)')}"
    )
    statuses = {n: s["status"] for n, s in call["sources"].items()}
    assert statuses == {"body/w": "ok", "task1/w": "ok", "task2/w": "none:disconnected"}
    (problem,) = seeds["seed000_multitask.py"]["report"]["problems"]
    assert problem["variable"] == "task2/w" and problem["kind"] == "unexpected-none"
    # the cause: no var_list, so every trainable variable; the ones to pass are named
    note = call["sources"]["task2/w"]["note"]
    assert "no var_list" in note and "a var_list of body/w, task1/w" in note
    assert "var_list" in problem["message"]
    fix = call["sources"]["task2/w"]["fix"]
    assert fix["kind"] == "var-list" and "a var_list of body/w, task1/w" in fix["text"]


def test_seed001_var_list_keeps_loss2_out_of_output1(seeds) -> None:
    calls = _check_calls(seeds["seed001_chained_heads.py"], never_run=(2,))
    assert list(calls[0]["sources"]) == ["output1"]
    assert list(calls[1]["sources"]) == ["output2"]
    # without a var_list, loss2 does train output1 (and the embedding, sparsely)
    everything = calls[2]["sources"]
    assert everything["output1"]["status"] == "unknown"  # never run: no value to judge
    assert everything["embedding_matrix"]["sparse"] is True
    assert "never run" in " ".join(calls[2]["notes"])
    # ... but train_op applies the first two calls' gradients only: the embedding both loss
    # read is in neither var_list, and bare TensorFlow's training never moves it (the answer's
    # own output); the var_list that leaves it out is named, at the line that made it
    moved = seeds["seed001_chained_heads.py"]["reference"]["moved"]
    assert moved == {"embedding_matrix": False, "output1": True, "output2": True}
    (problem,) = seeds["seed001_chained_heads.py"]["report"]["problems"]
    assert (problem["variable"], problem["kind"]) == ("embedding_matrix", "never-trained")
    assert "var_list" in problem["message"] and "keeps its initial value" in problem["message"]
    made = f"seed001_chained_heads.py:{line_of('seed001_chained_heads.py', 'params1 = params[')}"
    assert problem["fix"]["kind"] == "var-list" and problem["fix"]["where"].endswith(made)
    ((left_out,),) = (calls[0]["left_out"],)
    assert left_out["variable"] == "embedding_matrix" and left_out["var_list"].endswith(made)
    assert "left_out" not in calls[2]  # the call given no var_list leaves nothing out


def test_seed004_stop_gradient_names_the_line(seeds) -> None:
    calls = _check_calls(seeds["seed004_stop_gradient.py"])
    assert {n: s["status"] for n, s in calls[0]["sources"].items()} == {
        "weight": "ok",
        "biases": "ok",
    }
    experiment1 = calls[2]["sources"]
    assert experiment1["w1"]["status"] == "none:stopped"
    (cut,) = experiment1["w1"]["cut_points"]
    assert cut["op"] == "StopGradient" and cut["kind"] == "stopped"
    assert cut["source"].endswith(f":{line_of('seed004_stop_gradient.py', 'a_stopped = tf')}")
    assert experiment1["w2"]["status"] == "ok"
    experiment2 = calls[3]["sources"]  # the gradient comes back another way: ok, partly cut
    assert [s["status"] for s in experiment2.values()] == ["ok", "ok"]
    assert all(s["cut_points"][0]["op"] == "StopGradient" for s in experiment2.values())
    assert [s["status"] for s in calls[4]["sources"].values()] == ["ok", "ok"]


def test_var_lists_that_leave_out_what_the_program_assigns_or_never_trains_are_quiet(
    seeds,
) -> None:
    """A target network copied by ``assign``, gradients of an input with no optimizer, a base
    a checkpoint restores: each var_list leaves out a variable the loss reads, and none of
    them is a variable that never trains."""
    result = seeds["tf1_var_list_quiet.py"]
    assert result["same_output"]
    report = result["report"]
    assert [c["api"] for c in report["calls"]] == ["minimize", "tf.gradients", "minimize"]
    assert report["problems"] == []
    assert all("left_out" not in c for c in report["calls"])
