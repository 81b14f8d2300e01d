"""``gradscope run`` names a ``.numpy()`` round trip only where the program's own read cut a
path: never for gradscope's own reads, nor for a value read after the target was made."""

from __future__ import annotations

import pytest

from tests.frontends.program.test_run import by_site, line_of, norms, site, watched

pytestmark = pytest.mark.tf


def test_persistent_tape_second_loss_is_disconnected_without_roundtrip() -> None:
    import tensorflow as tf

    program = "persistent_two_losses.py"
    outcome, _ = watched(program)
    w, u = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 1.0])
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(w * 2.0)
        loss_u = tf.reduce_sum(u * 3.0)
    bare_u = tape.gradient(loss_u, u)
    bare = tape.gradient(loss, [w, u])
    assert bare[1] is None and bare[0] is not None and bare_u is not None
    first = by_site(outcome.report, site(program, "only_u = tape.gradient"))[0]
    assert [s.status for s in first.sources] == ["ok"]
    assert first.sources[0].norm == pytest.approx(norms([bare_u])[0], rel=1e-6)
    (call,) = by_site(outcome.report, f"{program}:{line_of(program, 'both = tape.gradient')}")
    by_name = {s.name: s for s in call.sources}
    assert by_name["w"].status == "ok"
    assert by_name["w"].norm == pytest.approx(norms(bare)[0], rel=1e-6)
    assert by_name["u"].status == "none:disconnected"
    assert by_name["u"].note == "" and by_name["u"].cut_points == ()
