"""The watched APIs of ``gradscope run``: what is patched and what is left to TensorFlow."""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest

from gradscope._src.watch.launch import Program
from gradscope._src.watch.run import run
from tests.frontends.program.test_run import norms

pytestmark = pytest.mark.tf

_JACOBIANS = """\
import tensorflow as tf
w = tf.Variable([1.0, 2.0, 3.0], name="w")
with tf.GradientTape(persistent=True) as t:
    y = w * w
J = t.jacobian(y, w)
J2 = t.jacobian(y, w, experimental_use_pfor=False)
with tf.GradientTape() as t2:
    x = tf.ones([2, 3]); t2.watch(x)
    z = x * w
B = t2.batch_jacobian(z, x)
print("J", J.numpy().tolist(), J2.numpy().tolist(), B.shape)
with tf.GradientTape() as t3:
    loss = tf.reduce_sum(w * w)
g = t3.gradient(loss, w)
print("g", g.numpy().tolist())
"""


def test_jacobians_run_as_written_unwatched_and_use_no_step(tmp_path: Path) -> None:
    """TensorFlow's own gradient calls inside ``jacobian`` and ``batch_jacobian`` are not the
    program's: the program runs to its end with ``--steps 1``, prints what Python prints,
    and only its own ``gradient`` call is reported, with the norm bare TensorFlow gives."""
    import tensorflow as tf

    script = tmp_path / "jac.py"
    script.write_text(_JACOBIANS, encoding="utf-8")
    bare = io.StringIO()
    with contextlib.redirect_stdout(bare):
        runpy.run_path(str(script), run_name="__main__")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        outcome = run(Program(str(script), ()), steps=1)
    assert out.getvalue() == bare.getvalue()
    report = outcome.report
    assert outcome.error is None and report.outcome == "finished"
    w = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    (call,) = report.calls
    assert call.site.endswith("jac.py:14") and call.api == "GradientTape.gradient"
    assert call.step == 1 and call.value == pytest.approx(float(loss))
    assert [s.norm for s in call.sources] == pytest.approx(norms([tape.gradient(loss, w)]))
    assert [n.split(": ", 1)[0].rsplit(":", 1)[1] for n in report.notes] == ["5", "6", "10"]
    assert all("is not watched" in n for n in report.notes)


def test_watched_eager_constants_are_named_after_the_line_that_made_them(
    tmp_path: Path,
) -> None:
    """Contract section 6: a watched tensor is ``NAME@FILE:LINE``, NAME the program's own
    name for it where it asks; an eager constant runs no op, so its line is kept where
    TensorFlow makes it."""
    import numpy as np
    import tensorflow as tf

    script = tmp_path / "consts.py"
    script.write_text(
        "import tensorflow as tf, numpy as np\n"
        "x = tf.constant([3.0, 4.0])\n"
        "z = tf.convert_to_tensor(np.ones(2, np.float32))\n"
        "with tf.GradientTape() as t:\n"
        "    t.watch([x, z])\n"
        "    y = tf.reduce_sum(x * z)\n"
        "g = t.gradient(y, [x, z])\n",
        encoding="utf-8",
    )
    (call,) = run(Program(str(script), ())).report.calls
    x, z = tf.constant([3.0, 4.0]), tf.convert_to_tensor(np.ones(2, np.float32))
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = tf.reduce_sum(x * z)
    bare = tape.gradient(y, [x, z])
    names = [(s.name.split("@")[0], s.name.rsplit("/", 1)[-1]) for s in call.sources]
    assert names == [("x", "consts.py:2"), ("z", "consts.py:3")]
    assert [s.norm for s in call.sources] == pytest.approx(norms(bare))
