"""``gradscope run``'s call sites: where the program asked, through its helpers (issue 27,
point 5). One helper asked from two places is two sites, each with its own steps; two
``tape.gradient`` calls on one line of a ``tf.function`` are two calls; no call is lost to
the site rule, with ``--stop`` or without. Expected None-ness from bare TensorFlow."""

from __future__ import annotations

import pytest

from gradscope._src.results import run as rr
from tests.frontends.program.test_run import line_of, site, unwatched, watched

pytestmark = pytest.mark.tf

PROGRAM = "helper_sites.py"


def _bare(in_function: bool) -> list[list[bool]]:
    """What TensorFlow gives the helper's two calls: which of ``w``, ``v`` get a gradient."""
    import tensorflow as tf

    w, v = tf.Variable([1.0, 2.0]), tf.Variable([3.0])

    def both_calls():
        with tf.GradientTape(persistent=True) as tape:
            both = tf.reduce_sum(w * w) + tf.reduce_sum(v)
            only_w = tf.reduce_sum(w * 3.0)
        return [tape.gradient(both, [w, v]), tape.gradient(only_w, [w, v])]

    if in_function:
        found: list[list[bool]] = []

        @tf.function
        def traced():
            found.extend([[g is not None for g in gs] for gs in both_calls()])
            return 0

        traced()
        return found
    return [[g is not None for g in gs] for gs in both_calls()]


def _statuses(call: rr.CallResult) -> list[bool]:
    """Which sources the report says get a gradient."""
    return [s.status in ("ok", "zero", "nan") for s in call.sources]


@pytest.fixture(scope="module")
def default() -> tuple[rr.RunReport, str]:
    outcome, printed = watched(PROGRAM)
    return outcome.report, printed


def test_one_helper_asked_from_two_places_is_two_sites(default) -> None:
    report, printed = default
    assert printed == unwatched(PROGRAM)
    helper = site(PROGRAM, "return tape.gradient")
    for mode, in_function in ((rr.EAGER, False), (rr.FUNCTION, True)):
        calls = [c for c in report.calls if c.site == helper and c.mode == mode]
        bare = _bare(in_function)
        assert bare == [[True, True], [True, False]]
        assert [_statuses(c) for c in calls] == bare
        assert [c.step for c in calls] == [1, 1]  # each its own site, not steps of one
        callers = [c.via for c in calls]
        assert len(set(callers)) == 2 and all(len(v) == 1 for v in callers)
        assert all(v[0].startswith(helper.rsplit(":", 1)[0]) for v in callers)
    eager = [c for c in report.calls if c.site == helper and c.mode == rr.EAGER]
    first_line = line_of(PROGRAM, "    first = grads_of(tape, both)")
    second_line = line_of(PROGRAM, "    second = grads_of(tape, only_w)")
    assert [c.via[0].rsplit(":", 1)[1] for c in eager] == [str(first_line), str(second_line)]
    (problem,) = [p for p in report.problems if p.site == helper and p.via == eager[1].via]
    assert (problem.variable, problem.kind) == ("v", "unexpected-none")
    assert f"(via {eager[1].via[0]})" in problem.message


def test_two_gradient_calls_on_one_line_of_a_function_are_both_reported(default) -> None:
    report, _ = default
    line = site(PROGRAM, "a, b = tape.gradient")
    calls = [c for c in report.calls if c.site == line]
    assert [_statuses(c) for c in calls] == _bare(True)  # the second call's None included
    assert [(p.site, p.variable, p.kind) for p in report.problems if p.site == line] == [
        (line, "v", "unexpected-none")]  # fmt: skip
    assert report.exit_code == 1 and report.outcome == rr.FINISHED


def test_stop_counts_steps_per_site_so_no_helper_call_is_lost() -> None:
    outcome, printed = watched(PROGRAM, stop=True)
    report = outcome.report
    # stopped at the helper's 2nd execution from its first caller: every call of the first
    # step was made and reported, its second call's None too
    assert printed == unwatched(PROGRAM).splitlines(True)[0]
    assert report.outcome == rr.STOPPED and report.exit_code == 1
    helper = site(PROGRAM, "return tape.gradient")
    assert [_statuses(c) for c in report.calls] == _bare(False)
    assert report.stop is not None and report.stop.site == helper
    assert [(p.variable, p.kind) for p in report.problems] == [("v", "unexpected-none")]
