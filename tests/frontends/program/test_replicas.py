"""``gradscope run --replicas 2`` under a program's own ``MirroredStrategy``, against bare
TensorFlow.

Each program runs as users run it, ``python -m gradscope run --replicas 2 PROGRAM``, in a
process of its own (forked from one that imported TensorFlow and touched no device):
gradscope must make the logical devices before the program's TensorFlow starts, and one
process holds one program's strategy (a second ``MirroredStrategy`` over the
same devices reuses the first one's collective keys; TensorFlow then fails with "Shape
mismatch in the collective instance").

The reference uses no ``tf.distribute`` at all: each replica's gradient is a tape over that
replica's share of the global batch (the first half, then the second, as
``experimental_distribute_dataset`` splits it), and the all-reduced gradient is their sum.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.cli.test_run import _validate
from tests.conftest import ROOT, Processes
from tests.frontends.program.test_run import PROGRAMS, line_of, parts

pytestmark = pytest.mark.tf


def watched(processes: Processes, tmp: Path, program: str, *args: str,
            options: tuple[str, ...] = ()) -> tuple[int, dict[str, Any], str]:  # fmt: skip
    """``gradscope run --replicas 2 --continue [OPTIONS]``, a process of its own (forked from
    one that imported TensorFlow and made no device: ``conftest.gradscope_processes``): exit
    code, JSON report, the program's own standard output."""
    report = tmp / f"{program}-{len(list(tmp.iterdir()))}.json"
    done = processes(
        ["run", "--replicas", "2", "--continue", *options, "--format", "json", "--output",
         str(report), str(PROGRAMS / program), *args], ROOT, os.environ,
    )  # fmt: skip
    assert report.exists(), done.stderr  # the run reported (its exit code: the tests' own)
    data: dict[str, Any] = json.loads(report.read_text())
    _validate(data)
    return done.returncode, data, done.stdout


def program(name: str) -> ModuleType:
    """A test program as a module (its ``__main__`` block does not run), for its helpers."""
    parts()  # its own helper module on the path
    spec = importlib.util.spec_from_file_location(name, PROGRAMS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def status(grad: np.ndarray | None) -> str:
    if grad is None:
        return "none:disconnected"
    return "ok" if np.any(grad) else "zero"


def bare_loop(mask: bool) -> dict[str, Any]:
    """Loss values and gradients of ``mirrored_loop.py``'s first step, per replica and whole,
    and the losses of its three plain SGD steps on the whole batch."""
    import tensorflow as tf

    loop = program("mirrored_loop")
    x = loop.batch(mask)
    w0, b0 = loop.initial()
    w, b = tf.Variable(w0), tf.Variable(b0)

    def grads(rows: np.ndarray) -> tuple[float, list[np.ndarray]]:
        with tf.GradientTape() as tape:
            loss = loop.loss_of(tf.constant(rows), w, b)
        return float(loss), [g.numpy() for g in tape.gradient(loss, [w, b])]

    each = [grads(x[:4]), grads(x[4:])]
    whole = grads(x)
    losses, norms = [], []
    for _ in range(3):
        loss, (gw, gb) = grads(x)
        losses.append(loss)
        norms.append([float(np.linalg.norm(gw)), float(np.linalg.norm(gb))])
        w.assign_sub(0.1 * gw)
        b.assign_sub(0.1 * gb)
    return {"each": each, "whole": whole, "losses": losses, "norms": norms}


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replicas")


@pytest.fixture(scope="module")
def loops(gradscope_processes: Processes, tmp: Path) -> dict[str, tuple[int, dict[str, Any], str]]:
    def timeline(name: str) -> tuple[str, ...]:
        return ("--steps", "3", "--timeline", str(tmp / f"{name}.json"))

    return {  # a function and strategy.run eagerly, 3 steps each on a timeline
        "mask": watched(
            gradscope_processes, tmp, "mirrored_loop.py", "--mask", options=timeline("mask")
        ),
        "eager": watched(
            gradscope_processes, tmp, "mirrored_loop.py", "--eager", options=timeline("eager")
        ),
        "tf.gradients": watched(
            gradscope_processes, tmp, "mirrored_loop.py", "--mask", "--tf-gradients"
        ),
    }


def check_against_bare(call: dict[str, Any], bare: dict[str, Any]) -> None:
    """Every replica's status and norm, and the all-reduced ones, as bare TensorFlow has them."""
    each, (whole_loss, whole) = bare["each"], bare["whole"]
    assert call["target"]["replicas"] == pytest.approx([loss for loss, _ in each], rel=1e-5)
    assert call["target"]["value"] == pytest.approx(whole_loss, rel=1e-5)
    assert list(call["sources"]) == ["w", "b"]
    for i, source in enumerate(call["sources"].values()):
        mine = [grads[i] for _, grads in each]
        replicas = source["replicas"]
        assert [(r["replica"], r["status"]) for r in replicas] == [
            (r, status(g)) for r, g in enumerate(mine)
        ]
        norms = [float(np.linalg.norm(g)) for g in mine]
        assert [r["norm"] for r in replicas] == pytest.approx(norms, rel=1e-5)
        summed = mine[0] + mine[1]
        assert source["status"] == status(summed)
        assert source["norm"] == pytest.approx(float(np.linalg.norm(summed)), rel=1e-5)
        assert source["norm"] == pytest.approx(float(np.linalg.norm(whole[i])), rel=1e-4)


def test_eager_strategy_run_reports_every_replica_and_their_sum(loops) -> None:
    code, report, printed = loops["eager"]
    assert re.findall(r"replicas (\d)", printed) == ["2"]  # the program's own strategy
    call = report["calls"][0]
    assert [c["step"] for c in report["calls"]] == [1, 2, 3]  # each step counted once
    assert (call["api"], call["mode"], call["step"]) == ("GradientTape.gradient", "eager", 1)
    assert call["site"].endswith(f"mirrored_loop.py:{line_of('mirrored_loop.py', 'tape.gradient')}")
    check_against_bare(call, bare_loop(mask=False))
    assert (report["problems"], code) == ([], 0)
    assert report["distribution"] == {"strategy": "mirrored", "replicas": 2,
                                      "devices": ["CPU:0", "CPU:1"]}  # fmt: skip


def test_mirrored_loop_watching_changes_no_loss(loops) -> None:
    for name, mask in (("eager", False), ("mask", True)):
        losses = [float(v) for v in re.findall(r"loss (\S+)", loops[name][2])]
        assert losses == pytest.approx(bare_loop(mask)["losses"], rel=1e-5)


def test_mask_zeroing_one_replica_is_a_replica_mismatch(loops) -> None:
    bare = bare_loop(mask=True)
    assert not np.any(bare["each"][1][1][0])  # bare TensorFlow: replica 1's w gradient is 0
    code, report, _ = loops["mask"]
    call = report["calls"][0]
    assert [c["step"] for c in report["calls"]] == [1, 2, 3] and call["mode"] == "function"
    # in a replica's thread, the user's own lines (through autograph's source maps)
    made = "return tf.nn.compute_average_loss("  # the loss's own op, inside loss_of
    lines = [line_of("mirrored_loop.py", text) for text in ("tape.gradient", made)]
    assert [call["site"].rsplit("/", 1)[-1], call["target"]["source"].rsplit("/", 1)[-1]] == [
        f"mirrored_loop.py:{n}" for n in lines]  # fmt: skip
    check_against_bare(call, bare)
    w, b = call["sources"]["w"], call["sources"]["b"]
    assert [r["status"] for r in w["replicas"]] == ["ok", "zero"] and w["status"] == "ok"
    assert [r["status"] for r in b["replicas"]] == ["ok", "ok"]
    (problem,) = report["problems"]
    assert (problem["kind"], problem["variable"], problem["site"]) == (
        "replica-mismatch", "w", call["site"])  # fmt: skip
    assert "replica 0 ok; replica 1 zero" in problem["message"]
    assert code == 1


def test_tf_gradients_inside_strategy_run_is_gathered_too(loops) -> None:
    code, report, _ = loops["tf.gradients"]
    (call,) = report["calls"]
    assert (call["api"], call["mode"]) == ("tf.gradients", "function")
    check_against_bare(call, bare_loop(mask=True))
    assert [p["kind"] for p in report["problems"]] == ["replica-mismatch"] and code == 1


@pytest.mark.parametrize("name", ["mask", "eager"])
def test_timeline_records_the_all_reduced_gradient_of_each_step(
    loops, tmp: Path, name: str
) -> None:
    assert loops[name][0] == {"mask": 1, "eager": 0}[name]  # as the tests above have it
    bare = bare_loop(mask=name == "mask")
    steps = json.loads((tmp / f"{name}.json").read_text())["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3]
    for step, norms in zip(steps, bare["norms"], strict=True):
        got = [step["variables"][v]["norm"] for v in ("w", "b")]
        assert got == pytest.approx(norms, rel=1e-4)


def test_fit_under_strategy_scope_reports_each_replica_at_the_fit_line(
    gradscope_processes: Processes, tmp_path: Path
) -> None:
    import tensorflow as tf

    code, report, printed = watched(gradscope_processes, tmp_path, "mirrored_fit.py")
    (call,) = report["calls"]
    assert call["api"] == "fit"
    assert call["site"].endswith(f"mirrored_fit.py:{line_of('mirrored_fit.py', 'net.fit(')}")
    fit = program("mirrored_fit")
    net, (x, y) = fit.model(), fit.data()

    def grads(rows: slice, scale: float) -> list[np.ndarray | None]:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(net(x[rows]) - y[rows])) * scale
        out = tape.gradient(loss, net.trainable_variables)  # unused/*: tracked, off the path
        return [None if g is None else g.numpy() for g in out]

    # Keras divides each replica's mean loss by the number of replicas (its
    # scale_loss_for_distribution): their sum is the whole batch's mean
    each = [grads(slice(0, 8), 0.5), grads(slice(8, 16), 0.5)]
    whole = grads(slice(0, 16), 1.0)
    names = [v.path for v in net.trainable_variables]
    assert list(call["sources"]) == names
    for i, source in enumerate(call["sources"].values()):
        assert [r["status"] for r in source["replicas"]] == [status(g[i]) for g in each]
        if whole[i] is None:
            assert source["status"] == "none:disconnected" and source["norm"] is None
            assert "not on the path" in source["note"]
            continue
        norms = [float(np.linalg.norm(g[i])) for g in each]
        assert [r["norm"] for r in source["replicas"]] == pytest.approx(norms, rel=1e-4)
        assert source["norm"] == pytest.approx(float(np.linalg.norm(whole[i])), rel=1e-4)
    assert sorted((p["kind"], p["variable"]) for p in report["problems"]) == [
        ("unexpected-none", "unused/bias"), ("unexpected-none", "unused/kernel")]  # fmt: skip
    assert code == 1 and "losses" in printed


def test_replicas_no_call_used_are_noted() -> None:
    from gradscope._src.results import run as rr
    from gradscope._src.results.replicas import Distribution
    from gradscope._src.watch.run import _unused

    alone = rr.CallResult("train.py:5", "GradientTape.gradient", "eager", 1, "", 1.0, ())
    split = rr.CallResult("train.py:5", "GradientTape.gradient", "eager", 1, "", 1.0, (),
                          replica_values=(0.5, 0.5))  # fmt: skip
    (note,) = _unused(Distribution("mirrored", 2), [alone])
    assert note.startswith("--replicas 2: no watched call ran inside strategy.run")
    assert _unused(Distribution("mirrored", 2), [alone, split]) == ()
    assert _unused(Distribution(), [alone]) == ()


#: The program's launcher for the multiworker test: 2 workers under ``gradscope run`` on
#: 127.0.0.1, their outputs in FOLDER (``workers.isolating`` puts it in a network namespace
#: with only a loopback interface where the system allows: TensorFlow's gRPC server listens
#: on every interface).
LAUNCHER = """
import contextlib, json, os, subprocess, sys
from gradscope._src.distribute.cluster import free_ports, loopback_up, tf_config
folder, program = sys.argv[1], sys.argv[2]
with contextlib.suppress(OSError):
    loopback_up()
ports = free_ports(2)
processes = []
for index in range(2):
    out = open(os.path.join(folder, f"out{index}.txt"), "w")
    err = open(os.path.join(folder, f"err{index}.txt"), "w")
    processes.append(subprocess.Popen(
        [sys.executable, "-m", "gradscope", "run", "--continue", "--format", "json",
         "--output", os.path.join(folder, f"worker{index}.json"), program],
        stdout=out, stderr=err, env={**os.environ, "TF_CONFIG": tf_config(ports, index)}))
codes = [p.wait() for p in processes]
json.dump(codes, open(os.path.join(folder, "codes.json"), "w"))
"""


def test_each_worker_of_the_programs_own_multiworker_strategy_reports_its_replica(
    tmp_path: Path,
) -> None:
    """The program's launcher (here, this test) starts one ``gradscope run`` per worker with
    its ``TF_CONFIG`` on 127.0.0.1: gradscope touches no TensorFlow state before the
    program makes its strategy, and each worker reports its own replica's gradient."""
    import tensorflow as tf

    from gradscope._src.distribute import workers

    launcher = subprocess.Popen(
        [*workers.isolating(), sys.executable, "-c", LAUNCHER, str(tmp_path),
         str(PROGRAMS / "multiworker_loop.py")],
        start_new_session=True,
    )  # fmt: skip
    try:
        launcher.wait(timeout=240)
    finally:
        workers.stop(launcher)  # the launcher's whole process group, on every way out
    codes = json.loads((tmp_path / "codes.json").read_text())
    errors = [(tmp_path / f"err{i}.txt").read_text()[-2000:] for i in range(2)]
    assert codes == [0, 0], errors
    loop = program("multiworker_loop")
    w = tf.Variable(np.ones((4, 3), np.float32))
    for index in range(2):
        rows = tf.constant(loop.batch()[4 * index : 4 * index + 4])
        with tf.GradientTape() as tape:
            loss = loop.loss_of(rows, w)
        grad = tape.gradient(loss, w).numpy()
        report = json.loads((tmp_path / f"worker{index}.json").read_text())
        call = report["calls"][0]
        assert call["target"]["value"] == pytest.approx(float(loss), rel=1e-5)
        source = call["sources"]["w"]
        assert (source["status"], source["norm"]) == ("ok", pytest.approx(
            float(np.linalg.norm(grad)), rel=1e-5))  # fmt: skip
        assert f"worker {index} epoch 1" in (tmp_path / f"out{index}.txt").read_text()


def test_a_replica_function_defined_in_the_traced_one_is_sited_at_its_own_lines(
    gradscope_processes: Processes, tmp: Path
) -> None:
    """The gradient line and the loss's line, not the strategy.run line; the all-reduced
    norms as bare TensorFlow gives them over the whole batch (the replicas' sum)."""
    import tensorflow as tf

    name = "nested_replica_fn.py"
    code, report, _ = watched(gradscope_processes, tmp, name)
    (call,) = report["calls"]
    lines = [line_of(name, "return tape.gradient("), line_of(name, "loss = tf.reduce_sum(")]
    assert [call["site"].rsplit("/", 1)[-1], call["target"]["source"].rsplit("/", 1)[-1]] == [
        f"{name}:{n}" for n in lines]  # fmt: skip
    w, u = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    x = tf.constant([[1.0], [-1.0], [2.0], [3.0]])  # the program's X, as one batch
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * x) + tf.reduce_sum(tf.nn.relu(u * x))
    bare = [float(tf.norm(g)) for g in tape.gradient(loss, [w, u])]
    assert [s["norm"] for s in call["sources"].values()] == pytest.approx(bare, rel=1e-5)
    statuses = []  # each replica's (half the batch's) gradient: w's is 0 on the first
    for rows in (x[:2], x[2:]):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * rows) + tf.reduce_sum(tf.nn.relu(u * rows))
        statuses.append([status(g.numpy()) for g in tape.gradient(loss, [w, u])])
    differ = [v for v, a, b in zip(("w", "u"), *statuses, strict=True) if a != b]
    assert [(p["kind"], p["variable"]) for p in report["problems"]] == [
        ("replica-mismatch", v) for v in differ]  # fmt: skip
    assert differ and code == 1
    assert len(call["target"]["replicas"]) == 2


def test_a_step_whose_trace_fails_on_no_gradients_still_names_the_cut(
    gradscope_processes: Processes, tmp: Path
) -> None:
    """``apply_gradients`` raises "No gradients provided" on the first replica, before the
    second makes its call: the call the trace made is reported (traced, never run) with the
    status bare TensorFlow gives and the argmax's line, not "no gradient call was made"."""
    import tensorflow as tf

    loop = program("mirrored_loop")
    w0, b0 = initial = loop.initial()
    w, b = tf.Variable(w0), tf.Variable(b0)
    argv, sys.argv = sys.argv, [*sys.argv, "--argmax"]
    try:
        with tf.GradientTape() as tape:
            loss = loop.loss_of(tf.constant(loop.batch(False)), w, b)
    finally:
        sys.argv = argv
    assert tape.gradient(loss, [w, b]) == [None, None] and initial  # bare TensorFlow
    code, report, _ = watched(gradscope_processes, tmp, "mirrored_loop.py", "--argmax")
    assert report["outcome"] == "raised" and code == 4  # the program raised (contract 6)
    (call,) = report["calls"]
    assert (call["api"], call["mode"], call["step"]) == ("GradientTape.gradient", "function", 0)
    argmax = f"mirrored_loop.py:{line_of('mirrored_loop.py', 'tf.argmax(head + b')}"
    for source in call["sources"].values():
        assert source["status"] == "none:nondifferentiable"
        assert [(c["op"], c["source"].rsplit("/", 1)[-1]) for c in source["cut_points"]] == [
            ("ArgMax", argmax)]  # fmt: skip
    assert sorted((p["kind"], p["variable"]) for p in report["problems"]) == [
        ("unexpected-none", "b"), ("unexpected-none", "w")]  # fmt: skip
