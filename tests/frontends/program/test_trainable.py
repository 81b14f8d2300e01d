"""``gradscope run``: a ``trainable`` flag changed after Keras traced the train step, against
what bare Keras does with the same program (which weights its second ``fit()`` changes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradscope.frontends.program.launch import Program
from gradscope.frontends.program.run import run
from tests.frontends.program.test_run import PROGRAMS, line_of, site, watched

pytestmark = pytest.mark.tf

NAMES = ["base/kernel", "base/bias", "head/kernel", "head/bias"]


def _bare(recompile: bool = False, run_eagerly: bool = False) -> list[bool]:
    """unfreeze.py in bare Keras: which weights the second fit() changes."""
    import keras
    import tensorflow as tf

    import tests.frontends.program.test_run as helpers

    keras.backend.clear_session()
    inputs = tf.keras.Input((4,))
    base = tf.keras.layers.Dense(8, activation="relu", name="base")
    head = tf.keras.layers.Dense(1, name="head")
    model = helpers.parts().seeded(tf.keras.Model(inputs, head(base(inputs))), 11)
    rng = np.random.default_rng(12)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 1)).astype("float32")
    base.trainable = False
    model.compile(optimizer="sgd", loss="mse", run_eagerly=run_eagerly)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    base.trainable, head.trainable = True, False
    if recompile:
        model.compile(optimizer="sgd", loss="mse", run_eagerly=run_eagerly)
    before = model.get_weights()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)]


@pytest.mark.parametrize("keep_going", [False, True])
def test_flags_changed_after_the_trace_are_reported_at_the_second_fit(keep_going: bool) -> None:
    outcome, printed = watched("unfreeze.py", keep_going=keep_going)
    changed = _bare()
    # bare Keras: the unfrozen base is never updated, the frozen head still is
    assert changed == [False, False, True, True]
    report = outcome.report
    first, second = report.calls
    assert first.site == site("unfreeze.py", "model.fit(") and first.api == "fit"
    assert [s.name for s in first.sources] == NAMES[2:]  # the trace asked for the head only
    assert second.site.endswith(f"unfreeze.py:{line_of('unfreeze.py', 'before = [') + 1}")
    assert second.api == "fit" and [s.name for s in second.sources] == NAMES
    assert [s.trainable_changed for s in second.sources] == [True] * 4
    # the status says what the traced step does: leaves the base out, trains the head
    assert [s.status for s in second.sources] == ["excluded"] * 2 + ["ok"] * 2
    assert [s.status == "ok" for s in second.sources] == changed
    assert all(first.site in s.note and "call compile() again" in s.note for s in second.sources)
    assert [(p.variable, p.kind) for p in report.problems] == [
        ("base/kernel", "never-trained"), ("base/bias", "never-trained"),
        ("head/kernel", "unexpected-connected"), ("head/bias", "unexpected-connected")]  # fmt: skip
    assert report.exit_code == 1
    if keep_going:
        assert printed == "changed [False, False, True, True]\n"


def _watch_variant(tmp_path: Path, text: str):
    import keras

    script = tmp_path / "variant.py"
    script.write_text(text, encoding="utf-8")
    keras.backend.clear_session()
    return run(Program(str(script), ()), keep_going=True)


def test_no_report_after_compile_again(tmp_path: Path) -> None:
    """compile() again: the second fit() traces its step afresh and trains what the flags say."""
    assert _bare(recompile=True) == [True, True, False, False]
    text = (PROGRAMS / "unfreeze.py").read_text()
    outcome = _watch_variant(tmp_path, text.replace(
        "before = [", "model.compile(optimizer='sgd', loss='mse')\nbefore = ["))  # fmt: skip
    assert not any(s.trainable_changed for c in outcome.report.calls for s in c.sources)
    assert outcome.report.problems == () and outcome.report.exit_code == 0


def test_no_report_when_the_step_runs_eagerly(tmp_path: Path) -> None:
    """``run_eagerly``: each step reads the flags afresh (and Keras' optimizer refuses the
    unfrozen base), so no traced step is blamed."""
    with pytest.raises(ValueError, match="Unknown variable"):
        _bare(run_eagerly=True)
    text = (PROGRAMS / "unfreeze.py").read_text()
    outcome = _watch_variant(tmp_path, text.replace('loss="mse")', 'loss="mse", run_eagerly=True)'))
    assert isinstance(outcome.error, ValueError) and "Unknown variable" in str(outcome.error)
    assert not any(s.trainable_changed for c in outcome.report.calls for s in c.sources)
