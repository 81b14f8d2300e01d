"""``gradscope run`` on XLA-compiled steps (``jit_compile``): statuses and norms are
TensorFlow's own values, and ``--steps`` is honoured."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradscope._src.results import run as rr
from tests.frontends.program.test_run import line_of, norms, unwatched, watched

pytestmark = pytest.mark.tf


def bare_steps(count: int) -> list[tuple[float, list]]:
    """xla_step.py's step in bare TensorFlow (XLA too): per step (loss, [gw, gu, gv])."""
    import tensorflow as tf

    w, u = tf.Variable([-1.0, 2.0]), tf.Variable([1.0, 1.0])
    v = tf.Variable([1.0, 2.0])

    @tf.function(jit_compile=True)
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.sqrt(w)) + tf.reduce_sum(tf.nn.relu(-u))
            loss += tf.reduce_sum(v * v)
        grads = tape.gradient(loss, [w, u, v])
        v.assign_sub(0.1 * grads[2])
        return loss, grads

    out = []
    for _ in range(count):
        loss, grads = step()
        out.append((float(loss), [g.numpy() for g in grads]))
    return out


def test_xla_step_nan_and_zero_are_tensorflows() -> None:
    outcome, _ = watched("xla_step.py", steps=2, stop=True)
    truth = bare_steps(2)
    calls = outcome.report.calls
    assert [c.step for c in calls] == [1, 2]  # --steps 2 --stop: two executions, then stopped
    assert outcome.report.outcome != rr.FINISHED
    assert all(c.site.endswith(f"xla_step.py:{line_of('xla_step.py', 'tape.gradient')}")
               for c in calls)  # fmt: skip
    for call, (loss, grads) in zip(calls, truth, strict=True):
        gw, gu, gv = grads
        assert np.isnan(gw).any() and not gu.any()
        assert [s.status for s in call.sources] == ["nan", "zero", "ok"]
        assert call.sources[1].norm == 0.0
        assert call.sources[2].norm == pytest.approx(norms([gv])[0], rel=1e-6)
        assert math.isnan(call.value) and math.isnan(loss)
        assert not any("XLA" in note for note in call.notes)
    assert calls[0].sources[2].norm != pytest.approx(calls[1].sources[2].norm)
    assert {(p.kind, p.variable) for p in outcome.report.problems} == {("nan", "w")}
    assert outcome.report.exit_code == 1


def test_xla_fit_nan_is_reported() -> None:
    import keras
    import tensorflow as tf

    outcome, _ = watched("xla_fit.py")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="o")], name="net")
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.sqrt(model(np.ones((4, 4), "float32")) - 100.0))
    bare = tape.gradient(loss, model.trainable_variables)
    assert all(np.isnan(g.numpy()).all() for g in bare)
    (call,) = outcome.report.calls
    assert call.api == "fit" and call.step == 1
    assert [s.status for s in call.sources] == ["nan", "nan"]
    assert {p.kind for p in outcome.report.problems} == {"nan"}


def test_xla_loop_keeps_the_weights_bit_for_bit() -> None:
    """Watching an XLA step computes the same weights: its recording never sits in a tf.cond,
    which would make XLA store the gradients it fuses into Adam's update (values.py). The
    first step is measured, the other five run the measuring ops unwritten."""
    plain = unwatched("xla_loop.py")
    outcome, printed = watched("xla_loop.py")
    assert printed == plain and plain.startswith("weights ")
    assert [c.step for c in outcome.report.calls] == [1]
    assert all(s.status == "ok" for c in outcome.report.calls for s in c.sources)
