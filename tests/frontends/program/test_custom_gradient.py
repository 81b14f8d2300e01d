"""``gradscope run`` names a ``tf.custom_gradient`` whose ``grad_fn`` returns None as
``inspect`` does: the ``grad_fn`` (``block.grad``) at its line, not the op at the call line."""

from __future__ import annotations

import sys

import pytest

from tests.frontends.program.test_run import PROGRAMS, by_site, line_of, site, watched

pytestmark = pytest.mark.tf


def test_custom_gradient_none_cut_is_inspects() -> None:
    import tensorflow as tf

    import gradscope

    outcome, _ = watched("custom_none.py")
    sys.path.insert(0, str(PROGRAMS))
    try:
        from custom_block import block

        v = tf.Variable([3.0, 4.0])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(block(v))
        assert tape.gradient(loss, v) is None
        report = gradscope.inspect(f"{PROGRAMS / 'custom_block.py'}:build")
    finally:
        sys.path.remove(str(PROGRAMS))
    (inspected,) = report.losses[0].pairs
    assert inspected.status == "none:nondifferentiable"
    (expected,) = inspected.cut_points
    grad_line = site("custom_block.py", "def grad(dy)")
    assert (expected.node, expected.source) == ("block.grad", grad_line)
    for text, op in [("return tape.gradient", expected.op), ("print(tape.gradient", "Identity")]:
        (call,) = by_site(outcome.report, f"custom_none.py:{line_of('custom_none.py', text)}")
        (source,) = call.sources
        assert source.status == inspected.status
        (cut,) = source.cut_points
        # eagerly tf.custom_gradient runs an Identity where the traced graph has an IdentityN
        assert (cut.node, cut.op, cut.kind, cut.source) == (
            expected.node, op, expected.kind, expected.source)  # fmt: skip
