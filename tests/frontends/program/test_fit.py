"""Keras models in ``gradscope run``: per-output causes in custom train steps and plain loops,
and a ``trainable`` flag changed after the train step was traced, against bare Keras."""

from __future__ import annotations

import pytest

from tests.frontends.program.test_run import by_site, line_of, norms, parts, watched

pytestmark = pytest.mark.tf


def _bare_a_loss(model, x, y):
    """Gradients of the mean squared error on output "a" alone, as bare TensorFlow gives them."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        loss = tf.reduce_mean(tf.square(y["a"] - pred["a"]))
    return float(loss), tape.gradient(loss, model.trainable_variables)


@pytest.fixture(scope="module")
def custom():
    return watched("custom_step.py")[0].report


def _check_heads(call, model, loss, bare, owner: str, target_line: int) -> None:
    assert [s.name for s in call.sources] == [v.path for v in model.trainable_variables]
    assert call.value == pytest.approx(loss, rel=1e-5)
    for s, g in zip(call.sources, bare, strict=True):
        if g is None:
            assert s.status == "none:disconnected"
            assert s.note == (f"reaches only output 'b' of model '{owner}', which the loss made "
                              f"at {call.target_source} does not read")  # fmt: skip
            assert call.target_source.endswith(f"custom_step.py:{target_line}")
        else:
            assert s.status == "ok" and s.norm == pytest.approx(norms([g])[0], rel=1e-4)
    assert [g is None for g in bare] == [False] * 4 + [True] * 2


def test_custom_train_step_names_the_output_its_loss_ignores(custom) -> None:
    program = "custom_step.py"
    model, x, y = parts().two_heads()
    loss, bare = _bare_a_loss(model, x[:8], {"a": y["a"][:8]})
    (call,) = by_site(custom, f"{program}:{line_of(program, 'grads = tape.gradient(loss, self')}")
    # contract section 6: a custom train_step's own tape is a GradientTape.gradient site
    assert call.api == "GradientTape.gradient" and call.mode == "function"
    line = line_of(program, 'loss = tf.reduce_mean(tf.square(y["a"] - pred["a"]))')
    _check_heads(call, model, loss, bare, "own_step", line)


def test_plain_eager_loop_names_the_output_its_loss_ignores(custom) -> None:
    program = "custom_step.py"
    model, x, y = parts().two_heads()
    loss, bare = _bare_a_loss(model, x[:8], {"a": y["a"][:8]})
    (call,) = by_site(custom, f"{program}:{line_of(program, 'grads = tape.gradient(loss, plain')}")
    assert call.api == "GradientTape.gradient" and call.mode == "eager"
    line = line_of(program, 'loss = tf.reduce_mean(tf.square(y["a"][:8]')
    _check_heads(call, model, loss, bare, "functional", line)


def test_custom_train_step_names_a_layer_call_skips(custom) -> None:
    import tensorflow as tf

    program = "custom_step.py"
    line = line_of(program, "loss = tf.reduce_mean(tf.square(y - self(")
    (call,) = by_site(custom, f"{program}:{line + 1}")
    used = tf.keras.layers.Dense(1)
    spare = tf.keras.layers.Dense(1)
    spare.build((None, 4))
    _, x, y = parts().two_heads()
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(y["a"][:8] - used(x[:8])))
    bare = tape.gradient(loss, [*used.trainable_variables, *spare.trainable_variables])
    assert [g is None for g in bare] == [False, False, True, True]
    assert [s.status for s in call.sources] == ["ok", "ok", *["none:disconnected"] * 2]
    for s in call.sources[2:]:
        assert s.note.startswith("reaches no output of model 'with_spare': its layer is not on")
    assert {(p.site, p.variable) for p in custom.problems} >= {
        (call.site, "spare/kernel"), (call.site, "spare/bias")}  # fmt: skip


_TWO_FITS = """\
import numpy as np, tensorflow as tf, keras
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="o")], name="net")
m.compile("sgd", loss=lambda yt, yp: tf.reduce_mean(tf.sqrt(yt - yp)))
x = np.ones((4, 3), "float32")
m.fit(x, np.full((4, 1), 100.0, "float32"), verbose=0, epochs=1)
m.train_on_batch(x, np.full((4, 1), 100.0, "float32"))
m.fit(x, np.full((4, 1), -100.0, "float32"), verbose=0, epochs=1)
"""


def _bare_two_fits():
    """Bare Keras: the gradients of the first fit's step, of train_on_batch's, and of the
    last fit's (NaN: the square root of a negative number)."""
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="o")], name="net")
    x = np.ones((4, 3), "float32")
    opt = keras.optimizers.SGD()
    out = []
    for target in (100.0, 100.0, -100.0):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.sqrt(target - m(x, training=True)))
        grads = tape.gradient(loss, m.trainable_variables)
        opt.apply_gradients(zip(grads, m.trainable_variables, strict=True))
        out.append((float(loss), grads))
    return out


@pytest.mark.parametrize("stop", [False, True])
def test_each_fit_line_is_its_own_site_though_the_step_was_traced_once(
    tmp_path, stop: bool
) -> None:
    import keras
    import numpy as np

    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    script = tmp_path / "fits.py"
    script.write_text(_TWO_FITS, encoding="utf-8")
    bare = _bare_two_fits()
    keras.backend.clear_session()
    report = run(Program(str(script), ()), stop=stop).report
    assert [(c.site.rsplit(":", 1)[1], c.api, c.step) for c in report.calls] == [
        ("6", "fit", 1), ("7", "train_on_batch", 1), ("8", "fit", 1)]  # fmt: skip
    for call, (loss, grads) in zip(report.calls, bare, strict=True):
        if np.isnan(loss):
            assert np.isnan(call.value)
            assert all(np.isnan(np.asarray(g)).all() for g in grads)
            assert [s.status for s in call.sources] == ["nan", "nan"]
            continue
        assert call.value == pytest.approx(loss, rel=1e-5)
        assert [s.norm for s in call.sources] == pytest.approx(norms(grads), rel=1e-4)
    assert {(p.site.rsplit(":", 1)[1], p.kind) for p in report.problems} == {("8", "nan")}
    assert report.outcome == "finished"
