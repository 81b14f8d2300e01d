"""``gradscope fix``: edit fixes proved in a scratch copy (``prove.py``).

The program's two runs are ``gradscope run`` processes forked from one warm driver
(``tests/forked.py``); what the edited program computes is checked against bare TensorFlow
running the same source in this process. The verdict's rules and ``--apply`` are tested on
hand-made proofs without TensorFlow."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gradscope._src import prove
from gradscope._src.errors import UsageError
from gradscope._src.results.fix import Edit
from tests.conftest import ROOT, Drivers
from tests.forked import Driver

PROGRAM = """import tensorflow as tf

w = tf.Variable([[1.0], [2.0]], name="w")
v = tf.Variable([[0.5], [-1.5]], name="v")
x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
with tf.GradientTape() as tape:
    h = tf.stop_gradient(tf.matmul(x, w))
    r = tf.round(tf.matmul(x, v) * 0.3)
    loss = tf.reduce_sum(h * 2.0 + r)
grads = tape.gradient(loss, [w, v])
"""


@pytest.fixture
def driver(drivers: Drivers) -> Driver:
    """``gradscope ARGS`` processes forked from the session's driver (shared with other
    files) that imported TensorFlow."""
    return drivers.processes({**os.environ, "PYTHONPATH": str(ROOT)})


def _runner(driver: Driver, logs: Path) -> prove.Runner:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(args: list[str], cwd: str, seconds: float) -> tuple[int, str]:
        report = Path(cwd).parent / "report.json"
        done = driver.run([args[0], "--output", str(report), *args[1:]], Path(cwd), env, logs)
        return done.code, report.read_text("utf-8") if report.exists() else ""

    return run


def _prove(driver: Driver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           source: str) -> tuple[Path, prove.Proof]:  # fmt: skip
    """``gradscope fix --check train.py`` (``source``) in a working folder of its own."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(source, encoding="utf-8")
    monkeypatch.chdir(work)
    return work, prove.check("train.py", runner=_runner(driver, tmp_path / "logs"))


def _bare(source: str) -> tuple[float, list[bool]]:
    """The loss and which gradients are None, as bare TensorFlow computes them."""
    space: dict[str, Any] = {}
    exec(compile(source, "train.py", "exec"), space)
    return float(space["loss"]), [g is None for g in space["grads"]]


@pytest.mark.tf
def test_fix_check_proves_both_edits_and_apply_writes_them(
    driver: Driver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    work, proof = _prove(driver, tmp_path, monkeypatch, PROGRAM)
    assert (work / "train.py").read_text("utf-8") == PROGRAM, "--check never writes"
    assert [(kind, e.start_line) for kind, e in proof.edits] == [
        ("remove-stop-gradient", 7), ("straight-through", 8)]  # fmt: skip
    statuses = {c.variable: (c.before, c.after) for c in proof.changes}
    assert statuses == {"w": ("none:stopped", "ok"), "v": ("none:nondifferentiable", "ok")}
    assert proof.forward_same and proof.passed and proof.exit_codes == (1, 0)
    # bare TensorFlow agrees: both gradients were None, neither is after; the loss is the same
    lines = PROGRAM.split("\n")
    for _kind, edit in sorted(proof.edits, key=lambda k: -k[1].start_line):
        lines[edit.start_line - 1 : edit.end_line] = edit.new.split("\n")
    loss, none = _bare(PROGRAM)
    fixed_loss, fixed_none = _bare("\n".join(lines))
    assert none == [True, True] and fixed_none == [False, False]
    assert fixed_loss == loss == proof.forward[0].before == proof.forward[0].after
    schema = json.loads((ROOT / "schema" / "fix-v1.json").read_text("utf-8"))
    jsonschema.validate(proof.to_dict(), schema)

    applied = prove.apply(proof)
    assert applied.applied and (work / "train.py").read_text("utf-8") == "\n".join(lines)
    with pytest.raises(UsageError, match="changed since"):
        prove.apply(proof)  # the file no longer holds the old text: nothing written


def _proof(before: str, after: str, values: tuple[float, float] = (1.0, 1.0),
           codes: tuple[int, int] = (1, 0)) -> prove.Proof:  # fmt: skip
    edit = Edit("t.py", 1, 1, "a = tf.stop_gradient(b)", "a = b")
    return prove.Proof("t.py", (), (("remove-stop-gradient", edit),),
                       (prove.Change("t.py:3", "w", before, after),),
                       (prove.Forward("t.py:3", 1, *values),), codes)  # fmt: skip


@pytest.mark.parametrize(
    ("proof", "passed"),
    [
        (_proof("none:stopped", "ok"), True),
        (_proof("none:stopped", "zero", codes=(1, 1)), True),
        (_proof("ok", "ok"), False),  # nothing gained
        (_proof("none:stopped", "ok", (1.0, 1.5)), False),  # the forward pass changed
        (_proof("none:stopped", "ok", (1.0, 1.0 + 1e-9)), True),  # within RTOL
        (_proof("none:stopped", "ok", codes=(1, 4)), False),  # the program raised after
        (_proof("none:stopped", "nan"), False),
    ],
)
def test_proof_verdict(proof: prove.Proof, passed: bool) -> None:
    assert proof.passed is passed


def test_apply_refuses_a_proof_that_failed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("a = tf.stop_gradient(b)\n", encoding="utf-8")
    with pytest.raises(UsageError, match="did not pass"):
        prove.apply(_proof("ok", "ok"))
    assert (tmp_path / "t.py").read_text("utf-8") == "a = tf.stop_gradient(b)\n"
    assert prove.apply(_proof("none:stopped", "ok")).applied
    assert (tmp_path / "t.py").read_text("utf-8") == "a = b\n"


def test_a_program_outside_the_working_folder_is_refused(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "in").mkdir()
    monkeypatch.chdir(tmp_path / "in")
    with pytest.raises(UsageError, match="outside the working folder"):
        prove.check("../t.py", runner=lambda *a: (0, ""))


#: One program, one gradient call per edit kind that is not a stop_gradient or a rounding; each
#: call's source gets None or a NaN from bare TensorFlow.
KINDS = """import numpy as np
import tensorflow as tf


class Counter(tf.Module):
    def __init__(self):
        self.w = tf.Variable([1.0, 2.0], name="w")
        self.steps = tf.Variable(0, dtype=tf.int32, name="steps")


m = Counter()
with tf.GradientTape() as tape:
    loss_a = tf.reduce_sum(m.w * 2.0) + tf.cast(m.steps, tf.float32)
grads_a = tape.gradient(loss_a, m.trainable_variables)

v = tf.Variable([0.5, -1.0], name="v")
with tf.GradientTape() as tape:
    h = v * 3.0
    t = np.tanh(h.numpy())
    loss_b = tf.reduce_sum(tf.constant(t) * 2.0)
grads_b = tape.gradient(loss_b, [v])

c = tf.Variable([0.31, -0.77], name="c")
with tf.GradientTape() as tape:
    n = tf.cast(c * 10.0, tf.int32)
    loss_c = tf.reduce_sum(tf.cast(n, tf.float32) * tf.constant([2.0, 3.0]))
grads_c = tape.gradient(loss_c, [c])

s = tf.Variable([0.0, 2.0], name="s")
with tf.GradientTape() as tape:
    loss_d = tf.reduce_sum(tf.constant([1.0, 3.0]) / s)
grads_d = tape.gradient(loss_d, [s])

p = tf.Variable([0.0, 0.5], name="p")
with tf.GradientTape() as tape:
    loss_e = tf.reduce_sum(tf.math.log(p))
grads_e = tape.gradient(loss_e, [p])

q = tf.Variable([0.0, 4.0], name="q")
with tf.GradientTape() as tape:
    loss_f = tf.reduce_sum(tf.sqrt(q))
grads_f = tape.gradient(loss_f, [q])

x = tf.constant([1.0, 2.0, 3.0])
with tf.GradientTape() as tape:
    loss_g = tf.reduce_sum(x * x)
grads_g = tape.gradient(loss_g, [x])
"""

#: A TensorFlow 1 graph: compute_gradients given no var_list returns None for `other`.
GRAPH = """import tensorflow as tf

graph = tf.Graph()
with graph.as_default():
    body = tf.compat.v1.get_variable("body", initializer=tf.constant([[1.0], [2.0]]))
    head = tf.compat.v1.get_variable("head", initializer=tf.constant([[0.5]]))
    other = tf.compat.v1.get_variable("other", initializer=tf.constant([[3.0]]))
    x = tf.constant([[1.0, 2.0]])
    loss = tf.reduce_sum(tf.matmul(tf.matmul(x, body), head))
    pairs = tf.compat.v1.train.GradientDescentOptimizer(0.1).compute_gradients(loss)
    with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        loss_g = session.run(loss)
        found = session.run([g for g, _ in pairs if g is not None])
grads_g = [None if g is None else 1.0 for g, _ in pairs]
"""


#: A forward pass run before the tape, a pad's value, a tensor named in `stop_gradients`.
MORE = """import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
generator = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, name="g")])
discriminator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="d")])
z = tf.random.normal([8, 3], seed=1)
fake = generator(z)
with tf.GradientTape() as tape:
    loss_h = -tf.reduce_mean(discriminator(fake))
grads_h = tape.gradient(loss_h, generator.trainable_variables)

x2 = tf.random.normal([3, 4], seed=1)
fill = tf.Variable(1.5, name="fill")
paddings = [[1, 1], [0, 0]]
with tf.GradientTape() as tape:
    padded = tf.pad(x2, paddings, constant_values=fill)
    loss_i = tf.reduce_sum(padded * padded)
grads_i = tape.gradient(loss_i, [fill])


@tf.function
def step(w2, h2):
    y = tf.matmul(h2, w2)
    loss = tf.reduce_sum(y)
    return loss, tf.gradients(loss, [w2], stop_gradients=[y])


loss_j, grads_j = step(tf.constant([[1.0], [2.0]]), tf.constant([[1.0, 2.0]]))
"""


def _edited(source: str, proof: prove.Proof) -> str:
    lines = source.split("\n")
    for _kind, edit in sorted(proof.edits, key=lambda k: -k[1].start_line):
        assert "\n".join(lines[edit.start_line - 1 : edit.end_line]) == edit.old
        lines[edit.start_line - 1 : edit.end_line] = edit.new.split("\n")
    return "\n".join(lines)


def _outcome(source: str) -> dict[str, tuple[float, list[bool]]]:
    """Per gradient call (``grads_X``, its loss ``loss_X``): the loss and which gradients are
    None or not finite, as bare TensorFlow computes them."""
    import numpy as np

    space: dict[str, Any] = {}
    # a name no file has: autograph reads a tf.function's source by its file name, and
    # train.py in the working folder holds the program before the edits
    exec(compile(source, "<bare>", "exec"), space)
    out = {}
    for name in sorted(k for k in space if k.startswith("grads")):
        tail = name.removeprefix("grads")
        loss = space[f"loss{tail}"]
        out[tail] = (float(loss), [g is None or not np.all(np.isfinite(np.asarray(g)))
                                   for g in space[name]])  # fmt: skip
    return out


@pytest.mark.tf
@pytest.mark.parametrize(
    ("source", "kinds"),
    [
        (KINDS, ["not-floating", "keep-tensorflow-ops", "straight-through", "divide-no-nan",
                 "safe-log", "double-where", "watch"]),
        (GRAPH, ["var-list"]),
        (MORE, ["move-into-tape", "differentiable-op", "stop-gradients-argument"]),
    ],
    ids=["eager", "graph", "more"],
)  # fmt: skip
def test_fix_check_proves_each_edit_kind_against_bare_tensorflow(
    driver: Driver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str,
    kinds: list[str],
) -> None:  # fmt: skip
    import math

    jsonschema = pytest.importorskip("jsonschema")
    work, proof = _prove(driver, tmp_path, monkeypatch, source)
    assert sorted(os.listdir(work)) == ["train.py"], "the scratch copy is gone"
    assert [kind for kind, _ in proof.edits] == kinds
    assert proof.passed, proof.to_dict()
    assert all(c.better or c.resolved or c.before == c.after for c in proof.changes)
    jsonschema.validate(proof.to_dict(), json.loads((ROOT / "schema" / "fix-v1.json").read_text()))
    # bare TensorFlow: every call had a None or NaN gradient, none has after the edits; each
    # loss is the same (a NaN fix's: finite, where it was not)
    before, after = _outcome(source), _outcome(_edited(source, proof))
    assert before.keys() == after.keys() and all(any(bad) for _, bad in before.values())
    for call, (loss, _bad) in before.items():
        fixed_loss, fixed_bad = after[call]
        assert fixed_bad and not any(fixed_bad), (call, fixed_bad)
        if math.isfinite(loss):
            assert math.isclose(fixed_loss, loss, rel_tol=1e-6, abs_tol=1e-6), call
        else:
            assert math.isfinite(fixed_loss), call


def _listing_runner(seen: list[list[str]], fail_at: int | None = None) -> prove.Runner:
    """A runner that records what the scratch copy holds and where it is, and prints a
    report with a stop_gradient edit (or raises at run ``fail_at``)."""
    report = {"calls": [{"site": "t.py:3", "step": 1, "target": {"value": 1.0}, "sources": {
        "w": {"status": "none:stopped", "fix": {"kind": "remove-stop-gradient", "edit": {
            "file": "t.py", "start_line": 1, "end_line": 1, "old": "a = tf.stop_gradient(b)",
            "new": "a = b"}}}}}], "problems": []}  # fmt: skip

    def run(args: list[str], cwd: str, seconds: float) -> tuple[int, str]:
        seen.append([cwd, *sorted(os.listdir(cwd))])
        if fail_at is not None and len(seen) == fail_at:
            raise UsageError("fix: the program ran longer than 1 s (--timeout)")
        return 1, json.dumps(report)

    return run


def test_the_scratch_copy_lives_inside_the_folder_and_never_outlives_the_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text("a = tf.stop_gradient(b)\n", encoding="utf-8")
    (tmp_path / ".gradscope-mcp").mkdir()  # the server's reports: never copied
    stale = tmp_path / ".gradscope-fix-999999999-old"  # a proof killed outright: its process
    (stale / "work").mkdir(parents=True)  # is gone, so the next proof removes its copy
    seen: list[list[str]] = []
    proof = prove.check("t.py", runner=_listing_runner(seen))
    assert len(seen) == 2 and proof.edits
    for cwd, *names in seen:
        assert os.path.commonpath([cwd, str(tmp_path)]) == str(tmp_path), "inside the folder"
        assert names == ["t.py"], "the copy holds the program, not itself nor the server's"
    assert sorted(os.listdir(tmp_path)) == [".gradscope-mcp", "t.py"]
    # a run that fails (its time limit): the copy goes with the error
    with pytest.raises(UsageError, match="ran longer"):
        prove.check("t.py", runner=_listing_runner(seen := [], fail_at=2))
    assert sorted(os.listdir(tmp_path)) == [".gradscope-mcp", "t.py"]


def test_sigterm_during_a_proof_removes_the_copy_then_ends(tmp_path: Path) -> None:
    """SIGTERM (what `timeout` and CI send) during a run: the copy is removed, then the
    process ends by the signal, as it would have. In a forked child of this process."""
    import signal

    (tmp_path / "t.py").write_text("a = tf.stop_gradient(b)\n", encoding="utf-8")
    pid = os.fork()
    if pid == 0:  # the child: a proof whose first run is ended by SIGTERM
        try:
            os.chdir(tmp_path)

            def run(args: list[str], cwd: str, seconds: float) -> tuple[int, str]:
                os.kill(os.getpid(), signal.SIGTERM)
                return 0, ""

            prove.check("t.py", runner=run)
        finally:
            os._exit(3)  # not reached when the signal ends it
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    assert sorted(os.listdir(tmp_path)) == ["t.py"]
