"""``gradscope run`` on TensorFlow 2 programs, in this process, against bare TensorFlow."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from gradscope._src.analysis import run as run_policy
from gradscope._src.frontends.python.frames import display_path
from gradscope._src.results import run as rr
from gradscope._src.watch.launch import Program
from gradscope._src.watch.run import Outcome, run

pytestmark = pytest.mark.tf

PROGRAMS = Path(__file__).parent / "programs"


def line_of(program: str, text: str) -> int:
    """The 1-based line of ``program`` holding ``text``."""
    lines = (PROGRAMS / program).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def watched(program: str, *args: str, **options: object) -> tuple[Outcome, str]:
    """Run a test program under gradscope; its report and what it printed. Keras' global
    name counters start afresh, as in the new process ``gradscope run`` is (a model is
    ``sequential``, not ``sequential_3`` after other tests made three)."""
    import keras

    keras.backend.clear_session()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        outcome = run(Program(str(PROGRAMS / program), args), **options)  # type: ignore[arg-type]
    return outcome, out.getvalue()


def unwatched(program: str) -> str:
    """What the program prints when run as Python runs it."""
    out = io.StringIO()
    sys.path.insert(0, str(PROGRAMS))
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(str(PROGRAMS / program), run_name="__main__")
    finally:
        sys.path.remove(str(PROGRAMS))
    return out.getvalue()


def parts():  # the programs' own helper module, as the tests' references use it
    sys.path.insert(0, str(PROGRAMS))
    try:
        import parts as module
    finally:
        sys.path.remove(str(PROGRAMS))
    return module


def site(program: str, text: str) -> str:
    """``FILE:LINE`` as reports name it (relative to the current directory)."""
    return f"{display_path(str(PROGRAMS / program))}:{line_of(program, text)}"


def by_site(report: rr.RunReport, where: str) -> list[rr.CallResult]:
    return [c for c in report.calls if c.site.endswith(where.split("/")[-1])]


def norms(grads) -> list[float | None]:
    return [None if g is None else float(np.linalg.norm(np.asarray(g))) for g in grads]


@pytest.fixture(scope="module")
def dcgan() -> tuple[Outcome, str]:
    return watched("dcgan.py")


def test_dcgan_generator_outside_its_tape_is_disconnected(dcgan) -> None:
    import tensorflow as tf

    generator, discriminator, real, noises = parts().gan()
    fake = generator(noises[0], training=True)
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake_out = discriminator(fake, training=True)
        gen_loss = tf.reduce_mean(tf.nn.softplus(-fake_out))
        disc_loss = tf.reduce_mean(tf.nn.softplus(-discriminator(real, training=True)))
        disc_loss += tf.reduce_mean(tf.nn.softplus(fake_out))
    bare_g = gen_tape.gradient(gen_loss, generator.trainable_variables)
    bare_d = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    assert all(g is None for g in bare_g)
    report = dcgan[0].report
    gen_call = by_site(report, f"dcgan.py:{line_of('dcgan.py', 'gen_tape.gradient')}")[0]
    assert gen_call.mode == rr.FUNCTION and gen_call.step == 1
    assert [s.status for s in gen_call.sources] == ["none:disconnected"] * 4
    fake_line = line_of("dcgan.py", "fake = generator(noise")
    assert all(f"dcgan.py:{fake_line}" in s.note for s in gen_call.sources)
    assert gen_call.value == pytest.approx(float(gen_loss), rel=1e-5)
    disc_call = by_site(report, f"dcgan.py:{line_of('dcgan.py', 'disc_tape.gradient')}")[0]
    assert [s.status for s in disc_call.sources] == ["ok", "ok"]
    assert [s.norm for s in disc_call.sources] == pytest.approx(norms(bare_d), rel=1e-5)
    assert {p.variable for p in report.problems} == {
        "generator/g1/kernel",
        "generator/g1/bias",
        "generator/g2/kernel",
        "generator/g2/bias",
    }
    assert report.exit_code == 1


def test_dcgan_watching_changes_no_loss(dcgan) -> None:
    assert dcgan[1] == unwatched("dcgan.py")
    assert dcgan[1].count("epoch") == 3  # the default: every step ran, the first watched
    assert len(dcgan[0].report.calls) == 2  # the first step only was watched


def test_fit_missing_loss_names_the_head_and_the_fit_line() -> None:
    import tensorflow as tf

    outcome, _ = watched("fit_missing_loss.py")
    model, x, y = parts().two_heads()
    with tf.GradientTape() as tape:
        pred = model(x[:8], training=True)
        loss = tf.reduce_mean(tf.square(y["a"][:8] - pred["a"]))
    bare = tape.gradient(loss, model.trainable_variables)
    report = outcome.report
    assert outcome.error is None and report.outcome == rr.FINISHED
    call, spare_call = report.calls
    assert call.api == "fit" and call.site.endswith(
        f"fit_missing_loss.py:{line_of('fit_missing_loss.py', 'model.fit(')}"
    )
    names = [s.name for s in call.sources]
    assert names == [v.path for v in model.trainable_variables]
    for s, g in zip(call.sources, bare, strict=True):
        if g is None:  # the whole cause: its last path ends in Keras' step, at the fit line;
            # the head was left out at the compile() line, named beside it
            compiled_at = (
                call.site.rpartition(":")[0]
                + ":"
                + str(line_of("fit_missing_loss.py", "model.compile("))
            )
            assert s.status == "none:disconnected"
            assert s.note == (
                f"reaches only output 'b', which no loss reads (compile() at {compiled_at} "
                "gives it no loss)"
            )
            assert s.fix is not None and s.fix.where == compiled_at
            assert f"`compile(loss=...)` at {compiled_at}" in s.fix.text
        else:
            assert s.status == "ok" and s.norm == pytest.approx(norms([g])[0], rel=1e-4)
    assert call.value == pytest.approx(float(loss), rel=1e-5)
    assert {p.variable for p in report.problems} == {
        "b/kernel",
        "b/bias",
        "spare/kernel",
        "spare/bias",
    }
    assert spare_call.site.endswith(f":{line_of('fit_missing_loss.py', 'spare_model.fit(')}")
    spare = {s.name: s for s in spare_call.sources}
    assert spare["with_spare/used/kernel"].status == "ok"
    assert spare["spare/kernel"].status == "none:disconnected"
    assert "reaches no output of model 'with_spare'" in spare["spare/kernel"].note


def test_eager_assign_is_cut_at_the_assign_line() -> None:
    import tensorflow as tf

    outcome, printed = watched("seed003_assign.py")
    x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]])
    patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]])
    with tf.GradientTape() as g:
        g.watch(patch)
        x[:2, :2].assign(patch)
        o = tf.reduce_mean(tf.tensordot(x, tf.transpose(x), axes=1))
    assert g.gradient(o, patch) is None
    first, fixed = outcome.report.calls
    assert first.mode == rr.EAGER
    (source,) = first.sources
    assert source.status == "none:assign"
    assert source.name == f"Variable@{site('seed003_assign.py', 'patch = tf.Variable')}"
    (cut,) = source.cut_points
    assert cut.kind == "assign" and cut.op == "ResourceStridedSliceAssign"
    assert cut.source == site("seed003_assign.py", "x[:2, :2].assign(patch)")
    assert fixed.sources[0].status == "ok"
    assert fixed.sources[0].norm == pytest.approx(np.linalg.norm([[1, 2], [1, 2]]), rel=1e-6)
    assert "do_dpatch None" in printed


def test_output_gradients_and_watched_tensors_eagerly() -> None:
    import tensorflow as tf

    outcome, _ = watched("seed002_output_gradients.py")
    w = [tf.Variable([0.0, 0.1]), tf.Variable([0.0, 0.2])]
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_mean(2.0 * (w[0] + w[1]))
        y2 = 7.0 * y
    plain = norms(tape.gradient(y2, w))
    by_hand = norms(tape.gradient(y, w, output_gradients=tape.gradient(y2, y)))
    turned = norms(tape.gradient(y2, w, output_gradients=-1.0))
    calls = outcome.report.calls
    assert [c.site.rsplit(":", 1)[1] for c in calls] == [
        str(line_of("seed002_output_gradients.py", text))
        for text in (
            "grads = tape.gradient(y2, w)\n"[:-1],
            "chain rule",
            "chain rule",
            "turned around",
        )
    ]
    assert [s.norm for s in calls[0].sources] == pytest.approx(plain)
    inner = calls[1].sources[0]  # tape.gradient(y2, y): a watched tensor is the source
    # named as the program holds it where it asks, at the line that made it
    assert inner.name == f"y@{site('seed002_output_gradients.py', 'y = tf.reduce_mean')}"
    assert inner.status == "ok" and inner.norm == pytest.approx(7.0)
    assert [s.norm for s in calls[2].sources] == pytest.approx(by_hand)
    assert [s.norm for s in calls[3].sources] == pytest.approx(turned)
    assert outcome.report.exit_code == 0


def test_clean_loop_exits_0_and_stops_after_steps_with_stop() -> None:
    import tensorflow as tf

    outcome, printed = watched("clean_loop.py", steps=2, stop=True)
    x, y, w0, b0 = parts().regression()
    w, b = tf.Variable(w0), tf.Variable(b0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w + b - y))
    first = norms(tape.gradient(loss, [w, b]))
    report = outcome.report
    assert report.exit_code == 0 and report.outcome == rr.STOPPED
    assert [c.step for c in report.calls] == [1, 2]
    assert [s.norm for s in report.calls[0].sources] == pytest.approx(first, rel=1e-6)
    assert report.calls[0].value == pytest.approx(float(loss), rel=1e-6)
    assert printed == "".join(unwatched("clean_loop.py").splitlines(True)[:2])
    where = site("clean_loop.py", "tape.gradient")
    assert report.stop == rr.Stop(where, (where,), refused=1, caught=False, finished=False)


def test_program_exception_is_returned_with_the_report_so_far() -> None:
    outcome, _ = watched("raises.py")
    assert isinstance(outcome.error, ValueError)
    assert outcome.report.exit_code == 4 and outcome.report.outcome == rr.RAISED
    (call,) = outcome.report.calls
    assert call.sources[0].norm == pytest.approx(np.linalg.norm([2.0, 4.0]))


def test_allow_none_turns_a_none_into_no_problem(dcgan) -> None:
    calls = dcgan[0].report.calls
    assert run_policy.problems_of(calls, ["generator/*"]) == []
    assert len(run_policy.problems_of(calls, ["generator/g1/*"])) == 2


def test_eager_lines_of_numpy_round_trip_integer_cast_and_early_read() -> None:
    import tensorflow as tf

    outcome, _ = watched("eager_roundtrip.py")
    w, v, u = (tf.Variable([[0.5], [-1.0]]), tf.Variable([[2.0], [1.0]]),
               tf.Variable([[1.0], [3.0]]))  # fmt: skip
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    early = x @ u
    with tf.GradientTape() as tape:
        back = tf.constant(np.tanh((x @ w).numpy()))
        counts = tf.cast(x @ v, tf.int32)
        loss = tf.reduce_sum(back) + tf.reduce_sum(tf.cast(counts, tf.float32))
        loss += tf.reduce_sum(early)
    assert tape.gradient(loss, [w, v, u]) == [None, None, None]
    (call,) = outcome.report.calls
    by_name = {s.name: s for s in call.sources}
    program = "eager_roundtrip.py"
    assert by_name["w"].status == "none:disconnected"
    assert site(program, "h = (x @ w).numpy()") in by_name["w"].note
    assert by_name["v"].status == "none:nondifferentiable"
    (cut,) = by_name["v"].cut_points
    assert (cut.op, cut.source) == ("Cast", site(program, "counts = tf.cast"))
    assert by_name["u"].status == "none:disconnected"
    assert site(program, "early = x @ u") in by_name["u"].note
    assert call.value == pytest.approx(float(loss), rel=1e-6)


def test_mixed_precision_norms_unscaled_and_float16_underflow_named() -> None:
    import tensorflow as tf

    outcome, printed = watched("mixed_precision.py")
    assert tf.keras.mixed_precision.global_policy().name == "float32"
    inputs = tf.keras.Input((4,))
    outputs = tf.keras.layers.Dense(1, name="head")(
        tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs))  # fmt: skip
    model = parts().seeded(tf.keras.Model(inputs, outputs), 7)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 1)).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y - model(x)))
    bare = norms(tape.gradient(loss, model.trainable_variables))
    fit_call, tiny_call = outcome.report.calls
    assert fit_call.loss_scale == float(printed.split("scale ")[1].split()[0]) == 32768.0
    assert [s.norm for s in fit_call.sources] == pytest.approx(bare, rel=2e-2)
    assert fit_call.value == pytest.approx(float(loss), rel=2e-2)
    w = tf.Variable(tf.ones([3], tf.float16))
    with tf.GradientTape() as tape:
        small = tf.constant(1e-4, tf.float16)
        loss16 = tf.reduce_sum(w * small * small)
    assert not np.any(tape.gradient(loss16, w).numpy())  # bare TensorFlow: exactly 0
    (tiny,) = tiny_call.sources
    assert tiny.status == "zero" and "float16" in tiny.note and "underflow" in tiny.note


def test_watching_changes_no_random_draw_loss_or_update() -> None:
    outcome, printed = watched("random_draws.py", steps=3)
    assert printed == unwatched("random_draws.py")
    assert outcome.report.outcome == rr.FINISHED
    assert sorted({c.mode for c in outcome.report.calls}) == [rr.EAGER, rr.FUNCTION]
    assert all(s.status == "ok" for c in outcome.report.calls for s in c.sources)


def test_apply_gradients_none_the_program_made_is_reported_at_its_line(tmp_path: Path) -> None:
    import tensorflow as tf

    script = tmp_path / "apply.py"
    script.write_text(
        "import tensorflow as tf\n"
        "w = tf.Variable([1.0, 2.0], name='w')\n"
        "b = tf.Variable([0.5], name='b')\n"
        "opt = tf.keras.optimizers.SGD(0.1)\n"
        "with tf.GradientTape() as tape:\n"
        "    loss = tf.reduce_sum(w * w)\n"
        "(gw,) = tape.gradient(loss, [w])\n"
        "opt.apply_gradients([(gw, w), (None, b)])\n",
        encoding="utf-8",
    )
    outcome = run(Program(str(script), ()))
    w = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    bare = norms(tape.gradient(loss, [w]))
    _, apply_call = outcome.report.calls
    assert apply_call.api == "apply_gradients" and apply_call.site.endswith("apply.py:8")
    assert [s.status for s in apply_call.sources] == ["ok", "none:unexplained"]
    assert apply_call.sources[0].norm == pytest.approx(bare[0])
    assert [(p.site, p.variable) for p in outcome.report.problems] == [(apply_call.site, "b")]


def test_a_gradscope_failure_never_breaks_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradscope._src.watcher import analyse

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("an analysis bug")

    monkeypatch.setattr(analyse, "analyse", broken)
    outcome, printed = watched("clean_loop.py")
    assert printed == unwatched("clean_loop.py")
    assert outcome.error is None and outcome.report.outcome == rr.FINISHED
    (note,) = outcome.report.notes
    assert "could not analyse this call (RuntimeError: an analysis bug)" in note


def test_eager_tape_around_a_function_call_and_a_stop_gradient(tmp_path: Path) -> None:
    import tensorflow as tf

    script = tmp_path / "eager_fn.py"
    script.write_text(
        "import tensorflow as tf\n"
        "w = tf.Variable([1.0, 2.0], name='w')\n"
        "v = tf.Variable([1.0, 2.0], name='v')\n"
        "f = tf.function(lambda x: tf.reduce_sum(x * w))\n"
        "with tf.GradientTape() as t:\n"
        "    frozen = tf.stop_gradient(v)\n"
        "    loss = f(tf.constant([1.0, 1.0])) + tf.reduce_sum(frozen * 2.0)\n"
        "grads = t.gradient(loss, [w, v])\n",
        encoding="utf-8",
    )
    outcome = run(Program(str(script), ()))
    w, v = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    f = tf.function(lambda x: tf.reduce_sum(x * w))
    with tf.GradientTape() as t:
        loss = f(tf.constant([1.0, 1.0])) + tf.reduce_sum(tf.stop_gradient(v) * 2.0)
    bare = t.gradient(loss, [w, v])
    (call,) = outcome.report.calls  # TensorFlow's own backward function is not a call
    assert bare[1] is None
    assert [s.status for s in call.sources] == ["ok", "none:stopped"]
    assert call.sources[0].norm == pytest.approx(norms(bare)[0])
    (cut,) = call.sources[1].cut_points
    assert (cut.op, cut.source) == ("StopGradient", f"{display_path(str(script))}:6")


def test_watched_tensors_in_functions_and_nan_and_zero_eagerly() -> None:
    import tensorflow as tf

    outcome, _ = watched("saliency_nan.py")
    model = parts().seeded(
        tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="d")]), 9
    )
    x = tf.constant(np.random.default_rng(10).normal(size=(4, 3)), tf.float32)
    with tf.GradientTape() as tape:
        tape.watch(x)
        score = tf.reduce_max(model(x), axis=1)
    bare_saliency = norms([tape.gradient(score, x)])[0]
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = model(x)
        gp = tf.reduce_mean(tf.square(tf.norm(inner.gradient(y, x), axis=1) - 1.0))
    bare_penalty = outer.gradient(gp, model.trainable_variables)
    w, dead = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sqrt(w - w)) + tf.reduce_sum(tf.nn.relu(-dead))
    bare_w, bare_dead = (g.numpy() for g in tape.gradient(loss, [w, dead]))
    saliency, _, penalty, eager = outcome.report.calls
    (image,) = saliency.sources
    assert image.name.startswith("x@") and image.status == "ok"
    assert image.norm == pytest.approx(bare_saliency, rel=1e-5)
    assert [s.status == "ok" for s in penalty.sources] == [g is not None for g in bare_penalty]
    assert not np.all(np.isfinite(bare_w)) and not np.any(bare_dead)
    assert [s.status for s in eager.sources] == ["nan", "zero"]
    assert [(p.variable, p.kind) for p in outcome.report.problems] == [
        ("sequential/d/bias", "unexpected-none"), ("w", "nan")]  # fmt: skip


def test_public_run_returns_the_report_and_raises_the_programs_error() -> None:
    """``gradscope.run`` mirrors ``gradscope run``: the report, or ``ProgramRaised`` with the
    report so far and the program's own exception as its cause."""
    import tensorflow as tf

    import gradscope
    from gradscope._src.watch.launch import ProgramRaised

    with contextlib.redirect_stdout(io.StringIO()):
        report = gradscope.run(str(PROGRAMS / "clean_loop.py"), steps=1)
        with pytest.raises(ProgramRaised) as raised:
            gradscope.run(str(PROGRAMS / "raises.py"))
    x, y, w0, b0 = parts().regression()
    w, b = tf.Variable(w0), tf.Variable(b0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w + b - y))
    assert isinstance(report, gradscope.RunReport) and report.exit_code == 0
    assert [s.norm for s in report.calls[0].sources] == pytest.approx(
        norms(tape.gradient(loss, [w, b])), rel=1e-6
    )
    assert isinstance(raised.value.__cause__, ValueError)
    assert raised.value.report.exit_code == 4 and len(raised.value.report.calls) == 1


def test_a_tensor_source_is_named_as_the_program_holds_it() -> None:
    """``gp_tape.gradient(pred, [interpolated])`` inside a tf.function: the source is
    ``interpolated``, at the line that made it (not the op's name, ``add``), and its norm is
    bare TensorFlow's."""
    bare = float(unwatched("gradient_penalty.py").split()[-1])
    outcome, _ = watched("gradient_penalty.py")
    (call,) = outcome.report.calls
    (source,) = call.sources
    made = site("gradient_penalty.py", "interpolated = real")
    assert source.name == f"interpolated@{made}"
    assert source.status == "ok" and source.norm == pytest.approx(bare, rel=1e-5)
