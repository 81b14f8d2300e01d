"""``gradscope run`` on TensorFlow 1 reference variables copied with ``tf.assign``: the
variable whose value was assigned is ``none:assign`` at the ``Assign``'s line, as for
resource variables. One subprocess (TensorFlow 1 behaviour cannot be undone in a process)."""

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
PROGRAM = "graph_ref_assign.py"


def _driver() -> None:
    """In the subprocess: the report, and bare TensorFlow's None-ness of every call."""
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
    truth = {name: [x is None for x in g[name]] for name in ("after_read", "through_output")}
    print(json.dumps({"report": report, "truth": truth}))


@pytest.fixture(scope="module")
def result(python_processes: Processes) -> dict[str, Any]:
    code = "from tests.frontends.program.test_graph_ref_assign import _driver; _driver()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = python_processes(["-c", code], ROOT, env, kill_after=300)  # a process of its own
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("name, x_status", [("after_read", "ok"),
                                            ("through_output", "none:disconnected")])  # fmt: skip
def test_assigned_variable_is_none_assign_at_the_assign_line(result, name: str,
                                                             x_status: str) -> None:  # fmt: skip
    (call,) = [c for c in result["report"]["calls"]
               if c["site"].endswith(f":{line_of(PROGRAM, name + ' = tf.gradients')}")]  # fmt: skip
    patch_none, x_none = result["truth"][name]
    assert patch_none and x_none == x_status.startswith("none:")
    patch, x = call["sources"]["patch"], call["sources"]["x"]
    assert patch["status"] == "none:assign"
    (cut,) = patch["cut_points"]
    assert (cut["op"], cut["kind"]) == ("Assign", "assign")
    assert cut["source"].endswith(f":{line_of(PROGRAM, 'update = tf.assign')}")
    assert x["status"] == x_status
