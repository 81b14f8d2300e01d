"""A ``tf.function`` retraced at one call site for other Python arguments (another model, a
flag) builds another gradient: a trace whose sources get a gradient where no earlier trace's
did, or none where one did, has its first execution watched even past ``--steps``, so its
None gradient is reported, never passed unseen. References: bare TensorFlow, the same
function traced the same two ways."""

from __future__ import annotations

import pytest

from tests.frontends.program.test_run import by_site, norms, site, watched

pytestmark = pytest.mark.tf

PROGRAM = "retraced_step.py"


def _bare() -> tuple[list[object], list[object]]:
    import tensorflow as tf

    disc = tf.Variable([[1.0], [2.0]])
    gen = tf.Variable([[1.0], [2.0]])
    aux = tf.Variable([3.0])

    def grads_of(x, w, use_aux):
        with tf.GradientTape() as tape:
            y = tf.matmul(x, w)
            if use_aux:
                y = y * aux
            loss = tf.reduce_sum(y)
        return tape.gradient(loss, [w, aux])

    return grads_of(tf.ones([2, 2]), disc, True), grads_of(tf.ones([3, 2]), gen, False)


def test_a_different_trace_past_steps_is_watched_once() -> None:
    first, second = _bare()
    assert first[1] is not None and second[1] is None  # the second trace cuts aux off
    outcome, _ = watched(PROGRAM)  # --steps 1
    calls = by_site(outcome.report, site(PROGRAM, "return tape.gradient"))
    # the first trace's first execution, then the second trace's first: the later
    # executions of either trace (the same computations) run unwatched
    assert [c.step for c in calls] == [1, 2]
    assert [s.name for s in calls[0].sources] == ["disc", "aux"]
    assert [s.status for s in calls[0].sources] == ["ok", "ok"]
    assert [s.norm for s in calls[0].sources] == pytest.approx(norms(first), rel=1e-6)
    assert [s.name for s in calls[1].sources] == ["gen", "aux"]
    assert [s.status for s in calls[1].sources] == ["ok", "none:disconnected"]
    assert calls[1].sources[0].norm == pytest.approx(norms(second)[0], rel=1e-6)
    assert [(p.kind, p.variable) for p in outcome.report.problems] == [("unexpected-none", "aux")]


def test_the_same_trace_again_is_not_watched_past_steps() -> None:
    outcome, _ = watched(PROGRAM, steps=2)  # step 2 is the generator's own first
    calls = by_site(outcome.report, site(PROGRAM, "return tape.gradient"))
    assert [c.step for c in calls] == [1, 2]
    assert [s.name for s in calls[1].sources] == ["gen", "aux"]
