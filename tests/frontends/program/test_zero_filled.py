"""``gradscope run`` on ``unconnected_gradients=ZERO``: the program received zeros, so the
status is ``zero`` (no unexpected-none problem), with a note that TensorFlow filled them."""

from __future__ import annotations

import numpy as np
import pytest

from tests.frontends.program.test_run import by_site, line_of, norms, unwatched, watched

pytestmark = pytest.mark.tf

PROGRAM = "zero_filled.py"


@pytest.mark.parametrize(
    "text", ["eager = tape.gradient", "return tape.gradient", "return tf.gradients"]
)
def test_zeros_tensorflow_filled_are_zero(text: str) -> None:
    import tensorflow as tf

    outcome, printed = watched(PROGRAM)
    assert printed == unwatched(PROGRAM)  # the program still receives TensorFlow's zeros
    w, u = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * 2.0)
    gw, gu = tape.gradient(loss, [w, u], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert not np.asarray(gu).any()
    (call,) = by_site(outcome.report, f"{PROGRAM}:{line_of(PROGRAM, text)}")
    by_name = {s.name: s for s in call.sources}
    assert by_name["w"].status == "ok"
    assert by_name["w"].norm == pytest.approx(norms([gw])[0], rel=1e-6)
    assert by_name["u"].status == "zero" and by_name["u"].norm == 0.0
    assert "TensorFlow filled zeros (unconnected_gradients=ZERO)" in by_name["u"].note
    assert not outcome.report.problems
    assert outcome.report.exit_code == 0
