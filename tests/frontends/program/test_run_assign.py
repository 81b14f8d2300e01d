"""``gradscope run`` on a variable's value carried into another variable by a write (Keras
``assign`` in a custom layer, eager and in a ``tf.function``; ``assign_add`` in a plain
``tf.Module``; ``scatter_update``, asked twice; an ``assign`` inside a ``tf.function`` the
loss calls, eagerly or traced): ``none:assign`` cut at the write's own line, as ``inspect``
and the Keras ``Monitor`` say, not at the op that reads the written variable (the tape never
recorded that read: the variable written is not trainable)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_in_process
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

PROGRAM = "assign_carried.py"

#: Each call of the program: (its comment, the write's comment, the op TensorFlow ran for it).
#: Keras implements ``assign_add`` and ``assign`` alike as ``AssignVariableOp``.
CALLS = [
    ("keras eager", "keras assign", "AssignVariableOp"),
    ("keras function", "keras assign", "AssignVariableOp"),
    ("plain assign_add", "assign_add", "AssignAddVariableOp"),
    ("scatter twice", "scatter", "ResourceScatterUpdate"),
    # the write inside a tf.function the loss's code calls: the cut is at the assign inside it,
    # whether the function is called eagerly or from a traced step (it was at the call)
    ("tf.function eager", "inside the tf.function", "AssignVariableOp"),
    ("tf.function traced", "inside the tf.function", "AssignVariableOp"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import keras

    keras.backend.clear_session()
    out = tmp_path_factory.mktemp("assign") / "report.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), PROGRAM, cwd=PROGRAMS)
    assert done.returncode == 1, done.stderr[-2000:]  # the None gradients are problems
    return json.loads(out.read_text())  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def truth() -> dict[str, list[bool]]:
    """Per call, which gradients bare TensorFlow gives as None (the program run unwatched)."""
    return runpy.run_path(str(Path(PROGRAMS) / PROGRAM), run_name="__main__")["nones"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("call, write, op", CALLS)
def test_run_carried_value_is_none_assign_at_the_write(
    report: dict[str, Any], truth: dict[str, list[bool]], call: str, write: str, op: str
) -> None:
    site = f"{PROGRAM}:{line_of(PROGRAM, f'# call: {call}')}"
    (found,) = [c for c in report["calls"] if c["site"] == site]
    assert found["mode"] == ("function" if call in ("keras function", "tf.function traced")
                             else "eager")  # fmt: skip
    sources = list(found["sources"].values())
    assert len(sources) == len(truth[call])
    assert any(truth[call])
    where = f"{PROGRAM}:{line_of(PROGRAM, f'# copy: {write}')}"
    for source, none in zip(sources, truth[call], strict=True):
        if not none:
            assert source["status"] == "ok"
            continue
        assert source["status"] == "none:assign"
        (cut,) = source["cut_points"]
        assert (cut["op"], cut["kind"], cut["source"]) == (op, "assign", where)


def test_run_carried_value_fix_is_the_assign_fix(report: dict[str, Any]) -> None:
    site = f"{PROGRAM}:{line_of(PROGRAM, '# call: keras eager')}"
    (problem,) = [p for p in report["problems"] if p["site"] == site]
    assert problem["kind"] == "unexpected-none"
    assert problem["fix"]["kind"] == "assign-as-tensor"
    assert problem["fix"]["where"] == f"{PROGRAM}:{line_of(PROGRAM, '# copy: keras assign')}"


def test_inspect_assign_inside_a_tf_function_is_cut_at_the_assign() -> None:
    """``inspect`` of a loss that calls a ``tf.function`` which assigns: ``none:assign`` at the
    ``assign``'s own line inside the function (it said ``none:disconnected``, then the call's
    line: the write was hidden inside the call op)."""
    import tensorflow as tf

    target = "assign_in_function_target.py"
    namespace = runpy.run_path(str(Path(PROGRAMS) / target))
    with tf.GradientTape() as tape:
        total = namespace["loss"]()
    assert tape.gradient(total, namespace["v"]) is None
    done = run_in_process("inspect", f"{target}:build", "--format", "json", cwd=PROGRAMS)
    pair = json.loads(done.stdout)["losses"]["copied"]["variables"]["v"]
    assert pair["status"] == "none:assign"
    (cut,) = pair["cut_points"]
    where = f"{target}:{line_of(target, '# copy: inside the function')}"
    assert (cut["op"], cut["kind"], cut["source"]) == ("AssignVariableOp", "assign", where)
