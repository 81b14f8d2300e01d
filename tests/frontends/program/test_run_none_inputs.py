"""A value a tape never recorded (carried through a variable write) fed to an input its op's
gradient leaves without one (a batch norm's ``mean``): ``run`` cuts the path at that op, as
``inspect`` does, not one op late at the write (``analyse._unrecorded`` assumed every floating
input of an op gets its gradient). Reference: bare TensorFlow's None gradients, unwatched."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from tests.conftest import run_in_process
from tests.frontends.program.test_run import PROGRAMS, line_of

pytestmark = pytest.mark.tf

PROGRAM = "none_input_carried.py"


def _assert_cut_at_batch_norm(rows: dict[str, dict[str, object]]) -> None:
    nones = runpy.run_path(str(Path(PROGRAMS) / PROGRAM), run_name="__main__")["nones"]
    assert nones == [True, False]  # bare TensorFlow: no gradient for w, one for scale
    assert rows["scale"]["status"] == "ok"
    assert rows["w"]["status"] == "none:nondifferentiable"
    (cut,) = rows["w"]["cut_points"]  # type: ignore[misc]
    where = f"{PROGRAM}:{line_of(PROGRAM, '# cut: batch norm')}"
    assert (cut["op"], cut["source"]) == ("FusedBatchNormV3", where)


def test_run_unrecorded_value_into_a_none_input_is_cut_at_its_op(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = run_in_process("run", "--format", "json", "--output", str(out), PROGRAM, cwd=PROGRAMS)
    assert done.returncode == 1, done.stderr[-2000:]
    (call,) = json.loads(out.read_text())["calls"]
    assert call["site"] == f"{PROGRAM}:{line_of(PROGRAM, '# call: eager')}"
    _assert_cut_at_batch_norm(call["sources"])


def test_inspect_value_into_a_none_input_is_cut_at_its_op() -> None:
    done = run_in_process("inspect", f"{PROGRAM}:build", "--format", "json", cwd=PROGRAMS)
    _assert_cut_at_batch_norm(json.loads(done.stdout)["losses"]["main"]["variables"])
