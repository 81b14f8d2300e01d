"""``gradscope run``: a ``trainable`` flag changed after Keras traced the train step, against
what bare Keras does with the same program (which weights its second ``fit()`` changes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gradscope._src.watch.launch import Program
from gradscope._src.watch.run import run
from tests.frontends.program.test_run import PROGRAMS, line_of, site, unwatched, watched

pytestmark = pytest.mark.tf

NAMES = ["base/kernel", "base/bias", "head/kernel", "head/bias"]


def _bare(recompile: bool = False, run_eagerly: bool = False, early: bool = False) -> list[bool]:
    """unfreeze.py in bare Keras: which weights the second fit() changes (``early``: the base
    frozen after compile(), and which weights the first fit() changes)."""
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
    if early:
        model.compile(optimizer="sgd", loss="mse")
        base.trainable = False  # after compile(), before the first fit()
        before = model.get_weights()
        model.fit(x, y, batch_size=16, epochs=1, verbose=0)
        return [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)]
    base.trainable = False
    model.compile(optimizer="sgd", loss="mse", run_eagerly=run_eagerly)
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    base.trainable, head.trainable = True, False
    if recompile:
        model.compile(optimizer="sgd", loss="mse", run_eagerly=run_eagerly)
    before = model.get_weights()
    model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    return [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)]


@pytest.mark.parametrize("stop", [False, True])
def test_flags_changed_after_the_trace_are_reported_at_the_second_fit(stop: bool) -> None:
    outcome, printed = watched("unfreeze.py", stop=stop)
    changed = _bare()
    # bare Keras: the unfrozen base is never updated, the frozen head still is
    assert changed == [False, False, True, True]
    report = outcome.report
    first, second = report.calls
    assert first.site == site("unfreeze.py", "model.fit(") and first.api == "fit"
    assert [s.name for s in first.sources] == NAMES[2:]  # the trace asked for the head only
    assert second.site.endswith(f"unfreeze.py:{line_of('unfreeze.py', 'before = [') + 1}")
    # the second fit()'s own step (what the traced step asks for: the head, measured), with
    # the variables it leaves out after them
    assert second.api == "fit" and second.step == 1 and second.value is not None
    assert [s.name for s in second.sources] == NAMES
    assert [s.trainable_changed for s in second.sources] == [True] * 4
    # the status says what the traced step does: leaves the base out, trains the head
    assert [s.status for s in second.sources] == ["excluded"] * 2 + ["ok"] * 2
    assert [s.status == "ok" for s in second.sources] == changed
    assert all(s.norm > 0 for s in second.sources if s.status == "ok")
    assert all(first.site in s.note and "call compile() again" in s.note for s in second.sources)
    assert [(p.variable, p.kind) for p in report.problems] == [
        ("base/kernel", "never-trained"), ("base/bias", "never-trained"),
        ("head/kernel", "unexpected-connected"), ("head/bias", "unexpected-connected")]  # fmt: skip
    assert report.exit_code == 1
    if not stop:
        assert printed == "changed [False, False, True, True]\n"


def _watch_variant(tmp_path: Path, text: str):
    import keras

    script = tmp_path / "variant.py"
    script.write_text(text, encoding="utf-8")
    keras.backend.clear_session()
    return run(Program(str(script), ()))


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


def test_keras_2_gan_idiom_discriminator_frozen_before_its_trace_is_never_trained() -> None:
    """Compiled trainable, frozen for the combined model: Keras 3 traces the discriminator's
    own step at its first train_on_batch(), frozen, so that step trains nothing."""
    import keras

    keras.backend.clear_session()
    assert unwatched("gan_idiom.py") == "discriminator trained False\n"  # bare Keras
    outcome, _ = watched("gan_idiom.py")
    report = outcome.report
    disc_call = report.calls[0]
    assert disc_call.site == site("gan_idiom.py", "disc.train_on_batch(")
    assert disc_call.api == "train_on_batch"
    assert [(s.name, s.status) for s in disc_call.sources] == [
        ("disc/d1/kernel", "frozen"), ("disc/d1/bias", "frozen")]  # fmt: skip
    compiled = site("gan_idiom.py", 'disc.compile(optimizer="sgd"')
    assert all(f"trainable at compile() at {compiled}" in s.note and "trains nothing" in s.note
               for s in disc_call.sources)  # fmt: skip
    assert [(p.site, p.variable, p.kind) for p in report.problems] == [
        (disc_call.site, "disc/d1/kernel", "never-trained"),
        (disc_call.site, "disc/d1/bias", "never-trained")]  # fmt: skip
    gan_call = report.calls[1]  # Keras' own tape in the combined model's step
    assert gan_call.site == site("gan_idiom.py", "gan.train_on_batch(")
    assert gan_call.api == "train_on_batch"
    assert [s.norm for s in gan_call.sources] == pytest.approx(_bare_gan(), rel=1e-5)


def _bare_gan() -> list[float]:
    """The combined model's first step in bare TensorFlow: the generator's gradient norms."""
    import tensorflow as tf

    import tests.frontends.program.test_run as helpers

    seeded = helpers.parts().seeded
    disc = seeded(tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)]), 2)
    gen = seeded(tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)]), 1)
    rng = np.random.default_rng(3)
    rng.normal(size=(8, 3))  # the real batch, drawn first
    z = rng.normal(size=(8, 4)).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(1.0 - disc(gen(z))))
    return helpers.norms(tape.gradient(loss, gen.trainable_variables))


def test_freezing_between_compile_and_fit_is_noted_not_a_problem(tmp_path: Path) -> None:
    """Freezing after compile() but before the first fit() takes effect in Keras 3 (its docs
    say otherwise): noted at the fit() line, and no problem, as the step trains the rest."""
    text = (PROGRAMS / "unfreeze.py").read_text()
    text = text.replace(
        'base.trainable = False\nmodel.compile(optimizer="sgd", loss="mse")',
        'model.compile(optimizer="sgd", loss="mse")\nbase.trainable = False',
    )
    text = text[: text.index("base.trainable = True")]
    assert _bare(early=True) == [False, False, True, True]  # bare Keras: the base is frozen
    outcome = _watch_variant(tmp_path, text)
    (call,) = outcome.report.calls  # the fit()'s own step, the frozen base noted in it
    assert [(s.name, s.status) for s in call.sources] == [
        ("base/kernel", "frozen"), ("base/bias", "frozen"),
        ("head/kernel", "ok"), ("head/bias", "ok")]  # fmt: skip
    noted = call.sources[:2]
    assert all("never trains it (Keras 3 reads trainable there" in s.note for s in noted)
    assert call.value is not None and all(s.norm > 0 for s in call.sources[2:])
    assert outcome.report.problems == () and outcome.report.exit_code == 0


@pytest.fixture(scope="module")
def elsewhere() -> tuple[object, dict[str, dict[str, bool]]]:
    """frozen_elsewhere.py watched, and bare Keras' answer (what the program printed: per
    case, whether each weight the flag change concerned changed after it)."""
    import json

    outcome, printed = watched("frozen_elsewhere.py")
    return outcome, json.loads(printed.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("case", "line"),
    [("module", 'seen["module"]'), ("freezing", "net.fit("), ("unfreezing", "net.fit(")],
)
def test_flags_changed_elsewhere_are_reported(
    elsewhere: tuple[object, dict[str, dict[str, bool]]], case: str, line: str
) -> None:
    """Where ``trainable`` changes does not matter (issue 42 point 6): a model built,
    compiled and frozen in an imported module, then unfrozen, fit, frozen and fit again; a
    layer frozen, and one unfrozen, by a callback while fit() runs. Each weight the frozen
    layer's traced step still changes is unexpected-connected at its fit() line, each one it
    leaves out after unfreezing never-trained, as bare Keras shows (the callback's were
    reported as nothing: "0 problems")."""
    outcome, bare = elsewhere
    report = outcome.report  # type: ignore[attr-defined]
    at = site("frozen_elsewhere.py", line)
    if case == "module":  # the fit() before the line that reads its weights
        at = at.rsplit(":", 1)[0] + f":{int(at.rsplit(':', 1)[1]) - 1}"
    found = {(p.variable, p.kind) for p in report.problems if p.site == at}
    kind = "unexpected-connected" if case != "unfreezing" else "never-trained"
    assert bare[case] and all(bare[case].values()) == (case != "unfreezing")
    assert {(name, kind) for name in bare[case]} <= found
    assert report.exit_code == 1
