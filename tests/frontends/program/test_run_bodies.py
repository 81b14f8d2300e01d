"""A path cut inside a ``tf.function`` the loss calls is cut at the op inside its body, at
that op's own line and of its own kind (``none:assign`` at an ``assign`` whose variable the
function returns; ``none:stopped`` at a ``stop_gradient``), by ``run`` (the function called
eagerly or from a traced step) and ``inspect`` alike. ``run`` said ``none:nondifferentiable``
at the call (``PartitionedCall``), which has a gradient. References: bare TensorFlow's None
gradients for the same program, unwatched."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_in_process
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

PROGRAM = "function_bodies.py"

#: Per variable: the status and cut op TensorFlow's own answer (None) is explained by, and
#: the comment on the line the cut must name.
EXPECTED = {
    "w": ("none:assign", "AssignVariableOp", "assign", "# cut: assign"),
    "u": ("none:stopped", "StopGradient", "stopped", "# cut: stop"),
}


@pytest.fixture(scope="module")
def truth() -> dict[str, list[bool]]:
    """Per call, which of ``w, u, v`` bare TensorFlow gives no gradient (run unwatched)."""
    return runpy.run_path(str(Path(PROGRAMS) / PROGRAM), run_name="__main__")["nones"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bodies") / "report.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), PROGRAM, cwd=PROGRAMS)
    assert done.returncode == 1, done.stderr[-2000:]  # the None gradients are problems
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def _assert_cut_inside(rows: dict[str, Any], nones: list[bool]) -> None:
    assert nones == [True, True, False]  # bare TensorFlow: w and u get None, v a gradient
    for name, none in zip(("w", "u", "v"), nones, strict=True):
        row = rows[name]
        if not none:
            assert row["status"] == "ok"
            continue
        status, op, kind, comment = EXPECTED[name]
        assert row["status"] == status
        (cut,) = row["cut_points"]
        where = f"{PROGRAM}:{line_of(PROGRAM, comment)}"
        assert (cut["op"], cut["kind"], cut["source"]) == (op, kind, where)


@pytest.mark.parametrize("call", ["eager", "traced"])
def test_run_cut_inside_a_tf_function_is_the_op_in_its_body(
    report: dict[str, Any], truth: dict[str, list[bool]], call: str
) -> None:
    site = f"{PROGRAM}:{line_of(PROGRAM, f'# call: {call}')}"
    (found,) = [c for c in report["calls"] if c["site"] == site]
    assert found["mode"] == ("eager" if call == "eager" else "function")
    _assert_cut_inside(found["sources"], truth[call])


def test_inspect_cut_inside_a_tf_function_is_the_op_in_its_body(
    truth: dict[str, list[bool]],
) -> None:
    done = run_in_process("inspect", f"{PROGRAM}:build", "--format", "json", cwd=PROGRAMS)
    pairs = json.loads(done.stdout)["losses"]["main"]["variables"]
    _assert_cut_inside(pairs, truth["eager"])
