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
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(work)
    proof = prove.check("train.py", runner=_runner(driver, tmp_path / "logs"))
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
