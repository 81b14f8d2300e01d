"""A call's numbers are its own execution's (issue 42 point 5): the value and norms reported
for step N of a site are what bare TensorFlow computed at that site's N-th execution, through
``gradscope run`` and ``gradscope.watch()``."""

from __future__ import annotations

import json
import runpy
import sys
from typing import Any

import pytest

import gradscope
from gradscope._src.results import run as rr
from tests.frontends.program.test_run import PROGRAMS, by_site, line_of, watched

pytestmark = pytest.mark.tf

PROGRAM = "maml.py"
SITES = {"inner": "= inner.gradient", "outer": "= outer.gradient", "later": "= tape.gradient"}


def _in_watch() -> tuple[rr.RunReport, str]:
    """The program run inside ``gradscope.watch()``, as runpy runs it; what it printed."""
    import contextlib
    import io

    import keras

    keras.backend.clear_session()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), gradscope.watch() as block:
        runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    return block.report, out.getvalue()


@pytest.fixture(scope="module", params=["run", "watch"])
def door(request: pytest.FixtureRequest) -> tuple[rr.RunReport, dict[str, Any]]:
    """The report of one door and what bare TensorFlow computed (the program's own values)."""
    sys.path.insert(0, str(PROGRAMS))
    try:
        if request.param == "run":
            outcome, printed = watched(PROGRAM)
            report = outcome.report
        else:
            report, printed = _in_watch()
    finally:
        sys.path.remove(str(PROGRAMS))
    return report, json.loads(printed.strip().splitlines()[-1])


def _call(report: rr.RunReport, name: str) -> rr.CallResult:
    calls = by_site(report, f"{PROGRAM}:{line_of(PROGRAM, SITES[name])}")
    assert len(calls) == 1, calls  # --steps 1: one execution watched
    return calls[0]


@pytest.mark.parametrize("name", ["inner", "outer"])
def test_second_order_step_reports_its_own_execution(
    door: tuple[rr.RunReport, dict[str, Any]], name: str
) -> None:
    """MAML: the outer tape's call is asked after the inner tapes' site had its step; its
    numbers are those of its first execution (they were the second's: the recording of eager
    ops stopped while the outer tape was still open)."""
    report, bare = door
    call = _call(report, name)
    first = bare[name][0]
    assert call.step == 1
    assert call.value == pytest.approx(first["value"], rel=1e-6)
    assert [s.norm for s in call.sources] == pytest.approx(first["norms"], rel=1e-5)
    assert [s.status for s in call.sources] == ["ok"] * 4


def test_a_site_first_reached_later_names_the_execution_it_watched(
    door: tuple[rr.RunReport, dict[str, Any]],
) -> None:
    """A site first reached once eager ops are no longer recorded is watched from its next
    execution, and the report says which: step 2, with that execution's numbers (it said
    step 1)."""
    report, bare = door
    call = _call(report, "later")
    second = bare["later"][1]
    assert call.step == 2
    assert call.value == pytest.approx(second["value"], rel=1e-6)
    assert [s.norm for s in call.sources] == pytest.approx(second["norms"], rel=1e-5)
