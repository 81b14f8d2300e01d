"""``gradscope run`` gives TensorFlow's verdict and a true cause at the user's line (issue 27
points 3, 4, 5): values that left TensorFlow, NaN origins, values thrown away, two tapes in
one ``with``, ``unconnected_gradients="zero"`` as a string, a long eager tape.

Each program prints the None-ness bare TensorFlow gives it; the tests run it unwatched
(``unwatched``) for that, and watched for the report."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from gradscope._src.results import causes
from tests.frontends.program.test_run import PROGRAMS, site, unwatched, watched

pytestmark = pytest.mark.tf


def bare(program: str, *args: str) -> list[object]:
    """What the program prints, each line parsed (run as Python runs it, no gradscope)."""
    import sys

    argv = sys.argv
    sys.argv = [str(PROGRAMS / program), *args]
    try:
        printed = unwatched(program)
    finally:
        sys.argv = argv
    return [ast.literal_eval(line.split(" ", 1)[-1] if line[0].isalpha() else line)
            for line in printed.splitlines()]  # fmt: skip


def none_ness(call) -> list[bool]:
    return [s.status.startswith("none:") for s in call.sources]


def test_iris_float_loss_is_cut_at_the_float_line() -> None:
    program = "causes_iris.py"
    (expected,) = bare(program)
    outcome, _ = watched(program)
    (call,) = outcome.report.calls
    assert none_ness(call) == expected == [True] * 4
    for s in call.sources:
        assert s.status == "none:disconnected"
        assert "does not read" not in s.note  # the loss reads the output, through float()
        (cut,) = s.cut_points
        assert (cut.node, cut.source) == ("float()", site(program, "losses.append(float("))
        assert site(program, "losses.append(float(") in s.note
    assert call.target_source == site(program, "loss = tf.convert_to_tensor")


def test_every_way_a_value_leaves_tensorflow_is_named_at_its_line() -> None:
    program = "causes_exits.py"
    (expected,) = bare(program)
    outcome, _ = watched(program)
    calls = outcome.report.calls
    assert [none_ness(c) for c in calls] == expected
    assert all(all(row) for row in expected[:-1])  # TensorFlow: None everywhere
    assert expected[-1] == [False]  # but where numpy hands an operator back to TensorFlow
    assert [s.status for s in calls[-1].sources] == ["ok"]
    exits = [("model.predict()", "out = model.predict("), (".numpy()", "parts = [v for v"),
             ("np.asarray()", "arr = np.asarray("), ("int()", "n = int("),
             ("np.array()", "m = np.array(model(x))"),
             ("tf.numpy_function()", "y = tf.numpy_function("),
             (".numpy()", "listed = (w * 4.0).numpy()"),
             ("np.tanh()", "t = np.tanh(model(x))"), ("np.mean()", "t = np.mean(w * 2.0)"),
             ("np.exp()", "t = np.exp(h) + 1.0")]  # fmt: skip
    for call, (node, text) in zip(calls[:-1], exits, strict=True):
        for s in call.sources:
            assert s.status == "none:disconnected"
            assert [(c.node, c.source) for c in s.cut_points] == [(node, site(program, text))]
            assert "does not read" not in s.note


def test_dcgan_two_tapes_in_one_with_second_is_stopped_not_nondifferentiable() -> None:
    program = "causes_dcgan.py"
    expected = bare(program)
    outcome, _ = watched(program)
    report = outcome.report
    for mode in ("eager", "function"):
        gen, disc = [c for c in report.calls if c.mode == mode]
        assert [none_ness(gen), none_ness(disc)] == list(expected[0 if mode == "eager" else 1])
        for s in gen.sources + disc.sources:
            if not s.status.startswith("none:"):
                assert s.status == "ok" and s.cut_points == (), (mode, s)
        for s in disc.sources[2:]:
            assert s.status == "none:stopped", (mode, s)
            assert [(c.op, c.source) for c in s.cut_points] == [
                ("StopGradient", site(program, "frozen = discriminator(tf.stop_gradient"))
            ]


def test_unconnected_gradients_zero_string_reaches_the_program() -> None:
    program = "causes_zero_string.py"
    outcome, printed = watched(program)
    assert printed == unwatched(program)
    assert "[3.0]" not in printed and "[0.0]" in printed  # TensorFlow's own zeros
    for call in outcome.report.calls:
        assert [s.status for s in call.sources] == ["ok", "zero"]
    assert outcome.report.problems == ()


def test_long_eager_tape_keeps_its_history(monkeypatch: pytest.MonkeyPatch) -> None:
    from gradscope._src.frontends.program import eager

    program = "causes_long_tape.py"
    (expected,) = bare(program, "600")
    monkeypatch.setattr(eager, "HISTORY", 200)  # a tape over more ops than that
    outcome, _ = watched(program, "600")
    (call,) = outcome.report.calls
    assert none_ness(call) == expected == [True, False]
    w, v = call.sources
    assert w.status == "none:stopped"
    assert [(c.op, c.source) for c in w.cut_points] == [
        ("StopGradient", site(program, "h = tf.stop_gradient"))
    ]
    import tensorflow as tf

    bw, bv = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = bv * 1.0
        for _ in range(600):
            y = y + tf.constant(0.5)
        loss = tf.stop_gradient(bw * 2.0) * y
    assert v.status == "ok" and v.norm == pytest.approx(abs(float(tape.gradient(loss, bv))))


def test_values_thrown_away_are_disconnected_with_their_line() -> None:
    program = "causes_thrown.py"
    expected = bare(program)
    outcome, _ = watched(program)
    model_call, array_call = outcome.report.calls
    assert [none_ness(model_call), none_ness(array_call)] == expected
    for s in model_call.sources[2:]:
        assert s.status == "none:disconnected" and s.cut_points == ()
        assert site(program, "out = self.d2(h)") in s.note
    a, b = array_call.sources
    assert a.status == "ok" and b.status == "none:disconnected"
    assert site(program, "ta.write(1, b * 3.0)") in b.note


def test_nan_gradients_have_their_origin_eagerly_and_in_a_function() -> None:
    import tensorflow as tf

    program = "causes_nan.py"
    w, v = tf.Variable([1.0, -2.0, 0.0]), tf.Variable([0.0, 4.0])
    with tf.GradientTape() as tape:
        z = w * tf.constant([2.0, 1.0, 1.0])
        safe = tf.where(z > 0.0, tf.math.log(z), tf.zeros_like(z))
        loss = tf.reduce_sum(safe) + tf.reduce_sum(tf.sqrt(v))
    bw, bv = tape.gradient(loss, [w, v])
    assert np.isnan(bw.numpy()).any() and np.isposinf(bv.numpy()).any()  # bare TensorFlow
    outcome, printed = watched(program)
    assert printed == unwatched(program)  # what the program computes is unchanged
    log_line, sqrt_line = site(program, "tf.math.log(z)"), site(program, "tf.sqrt(v)")
    calls = outcome.report.calls
    assert [c.mode for c in calls] == ["eager", "function"]
    for call in calls:
        sw, sv = call.sources
        assert sw.status == sv.status == "nan"
        assert sw.nan_origin is not None and sv.nan_origin is not None
        got = [(o.op, o.where, o.value, o.source) for o in (sw.nan_origin, sv.nan_origin)]
        # inside a function gradscope reads no forward value (it would change what
        # TensorFlow fuses, so what the program computes): the Log is found by its gradient
        where = "forward" if call.mode == "eager" else "gradient"
        assert got == [("Log", where, "nan", log_line),
                       ("Sqrt", "gradient", "inf", sqrt_line)], call.mode  # fmt: skip
    lines = {"w": log_line, "v": sqrt_line}
    problems = outcome.report.problems
    assert {p.variable for p in problems} == {"w", "v"}
    assert all(lines[p.variable] in p.message for p in problems)


def test_zero_from_an_untaken_cond_branch_says_why() -> None:
    program = "causes_cond.py"
    eager_bare, function_bare = bare(program)
    assert eager_bare[1] is None and function_bare[1] == 0.0  # TensorFlow's own answers
    outcome, _ = watched(program)
    eager_call, function_call = outcome.report.calls
    assert [s.status for s in eager_call.sources] == ["ok", "none:disconnected"]
    assert "tf.cond" in eager_call.sources[1].note  # the branch taken ran, the other never
    w, u = function_call.sources
    assert w.status == "ok" and w.norm == pytest.approx(function_bare[0])
    assert u.status == "zero"
    assert f"tf.cond at {site(program, 'y = tf.cond(')}" in u.note
    assert "eager" in u.note and "None" in u.note


def test_zero_through_a_py_function_that_leaves_tensorflow_says_why() -> None:
    program = "causes_py_function.py"
    (expected,) = bare(program)
    assert expected is not None and not np.any(expected)  # TensorFlow: zeros, not None
    outcome, _ = watched(program)
    ((s,),) = [c.sources for c in outcome.report.calls]
    assert s.status == "zero"
    assert f"tf.py_function at {site(program, 'y = tf.py_function(')}" in s.note


def test_loss_scale_overflows_keras_skips_are_not_nan_problems() -> None:
    """Mixed precision: Keras' LossScaleOptimizer skips the steps whose gradients overflow at
    its scale (the bare program sees the weights unmoved) and trains once the scale is low
    enough. Watched long enough to see a finite step, those non-finite gradients are told as
    skipped, not problems; watched one step, the NaN stays a problem that says how to tell."""
    skipped, finite = bare("mixed_overflow.py")
    assert finite is True and skipped[:-1] == [True] * 5 and skipped[-1] is False
    outcome, _ = watched("mixed_overflow.py", steps=6)
    calls = outcome.report.calls
    assert [c.step for c in calls] == [1, 2, 3, 4, 5, 6]
    base = [next(s for s in c.sources if s.name.startswith("base/kernel")) for c in calls]
    assert [s.status for s in base] == ["nan"] * 5 + ["ok"]  # nan exactly on skipped steps
    assert all("LossScaleOptimizer skipped this step" in s.note for s in base[:5])
    assert all(c.loss_scale is not None for c in calls)
    assert outcome.report.problems == () and outcome.report.exit_code == 0
    outcome, _ = watched("mixed_overflow.py", steps=1)
    problems = outcome.report.problems
    assert {p.kind for p in problems} == {"nan"} and outcome.report.exit_code == 1
    assert all("watch more steps (--steps 10)" in p.message for p in problems)


def test_an_integer_variable_is_said_to_hold_integers_at_the_line_that_made_it() -> None:
    """Not "an op with no gradient" at the line that reads it: TensorFlow differentiates
    floating-point values only, so the cause (and its fix, made with ``trainable=False``) is
    the variable's dtype, at the line that made it, whatever its paths cross."""
    program = "causes_integer.py"
    expected = bare(program)
    assert expected == [[False, True]] * 3  # bare TensorFlow: the integer variable gets None
    outcome, _ = watched(program)
    calls = outcome.report.calls
    assert [none_ness(c) for c in calls[:3]] == expected
    assert [c.api for c in calls] == ["GradientTape.gradient"] * 3 + ["fit"]
    assert none_ness(calls[3]) == [False, True]  # fit's own step: Keras warns, None too
    made = {
        "steps": site(program, "steps = tf.Variable(3"),
        "sequential/counted/counter": site(program, "self.counter = self.add_weight("),
    }
    for call in calls:
        integer = call.sources[1]
        assert isinstance(integer.cause, causes.NotFloating), integer
        assert (integer.cause.line, integer.cause.dtype) == (made[integer.name], "int32")
        assert "holds int32 values" in integer.note and made[integer.name] in integer.note
        assert integer.fix is not None and integer.fix.kind == "not-floating"
        assert integer.fix.where == made[integer.name]
        assert "trainable=False" in integer.fix.text
        assert call.sources[0].cause is None and call.sources[0].status == "ok"
    kinds = {(p.variable, str(p.kind)) for p in outcome.report.problems}
    assert kinds == {("steps", "unexpected-none"),
                     ("sequential/counted/counter", "unexpected-none")}  # fmt: skip


def test_numpy_function_is_named_with_the_python_function_it_runs() -> None:
    """A model called inside ``tf.numpy_function`` (its variables never enter the graph) and
    a reward computed through it (its op has no gradient): each named at the call's line,
    with the Python function, and the fix keeps TensorFlow ops (bare TensorFlow: None)."""
    program = "causes_numpy_function.py"
    expected = bare(program)
    assert expected == [[True, True]] * 3
    outcome, _ = watched(program)
    calls = outcome.report.calls
    assert [none_ness(c) for c in calls] == expected
    lines = [site(program, text) for text in ("tf.numpy_function(play", "tf.numpy_function(reward",
                                              "tf.py_function(func=play")]  # fmt: skip
    for call, line, api, status, called in zip(
        calls, lines, ("tf.numpy_function", "tf.numpy_function", "tf.py_function"),
        ("none:disconnected", "none:nondifferentiable", "none:disconnected"),
        ("play", "reward", "play"), strict=True,
    ):  # fmt: skip
        for s in call.sources:
            assert s.status == status
            assert s.fix is not None and s.fix.kind == "keep-tensorflow-ops", s
            assert (
                s.fix.where == line and f"`{called}` runs in Python through `{api}`" in s.fix.text
            )
            if status == "none:disconnected":
                assert isinstance(s.cause, causes.NumpyFunction) and s.cause.feeds
                assert f"what {api} returns at {line} ({called})" in s.note
            else:
                assert [(c.op, c.source) for c in s.cut_points] == [("PyFunc", line)]


def test_a_layer_whose_output_call_drops_is_fixed_at_the_return() -> None:
    """The layer is called, its value made and dropped: the fix names the line that made it
    and the ``return`` of ``call()`` that leaves it out (bare TensorFlow: None)."""
    program = "causes_dropped_output.py"
    (expected,) = bare(program)
    assert expected == [False, False, True, True]
    outcome, _ = watched(program)
    calls = outcome.report.calls
    assert [none_ness(c) for c in calls] == [expected, expected]  # the tape, then fit
    made, returned = (site(program, t) for t in ("hiddens.append(", "return hiddens[0]"))
    for s in calls[1].sources[2:]:
        assert s.fix is not None and (s.fix.kind, s.fix.where) == ("off-path-layer", returned)
        assert f"the value made at {made} never reaches what `call()` returns" in s.fix.text


def test_images_made_before_both_tapes_are_named_where_made_and_where_read() -> None:
    """The generator's images, made before both tapes, reach the generator's loss directly
    and through the discriminator's update (a write the later reads see): the cause is the
    line that made them, outside the tape, and the line where the tape reads them, not the
    optimizer's ``apply_gradients`` (bare TensorFlow: None)."""
    program = "causes_gan_reused.py"
    (expected,) = bare(program)
    assert expected == [True, True]
    outcome, _ = watched(program)
    call = outcome.report.calls[-1]
    assert none_ness(call) == expected
    made, read = (site(program, t) for t in ("generated = generator(noise)",
                                             "g_loss = -tf.reduce_mean("))  # fmt: skip
    for s in call.sources:
        assert isinstance(s.cause, causes.OutsideTape)
        assert (s.cause.line, s.cause.read_at) == (made, read)
        assert s.fix is not None and (s.fix.kind, s.fix.where) == ("move-into-tape", made)


def test_tf_sign_on_every_path_is_an_always_zero_problem() -> None:
    """TensorFlow returns zeros (not None) through ``tf.sign``: the status stays ``zero`` as
    TensorFlow says, the cause names the sign's line, and the run fails (always-zero) with the
    straight-through fix; the estimator itself (``stop_gradient`` around the sign) is quiet."""
    program = "causes_sign.py"
    expected = bare(program)
    assert expected == [[(False, True), (False, True)], [(False, True)], [(False, False)]]
    outcome, _ = watched(program)
    calls = outcome.report.calls
    assert [[s.status for s in c.sources] for c in calls] == [["zero", "zero"], ["zero"], ["ok"]]
    lines = [site(program, t) for t in ("binary = tf.sign(", "b = tf.sign(w)")]
    for call, line in zip(calls[:2], lines, strict=True):
        for s in call.sources:
            assert isinstance(s.cause, causes.ZeroDerivative) and s.cause.line == line
            assert s.fix is not None and (s.fix.kind, s.fix.where) == ("straight-through", line)
    assert calls[2].sources[0].cause is None
    problems = sorted((p.site, p.variable, str(p.kind)) for p in outcome.report.problems)
    assert problems == sorted([(calls[0].site, "w", "always-zero"),
                               (calls[0].site, "shift", "always-zero"),
                               (calls[1].site, "w", "always-zero")])  # fmt: skip
