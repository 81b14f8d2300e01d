"""``gradscope run`` on variables a tape never watches: the status ``inspect`` gives (a
non-trainable variable is ``frozen``), never a cut at an op on their paths."""

from __future__ import annotations

import pytest

from tests.frontends.program.test_run import by_site, line_of, watched

pytestmark = pytest.mark.tf

PROGRAM = "unwatched.py"


@pytest.fixture(scope="module")
def report():
    return watched(PROGRAM, steps=2)[0].report


def call_at(report, text: str, step: int = 1):
    calls = by_site(report, f"{PROGRAM}:{line_of(PROGRAM, text)}")
    return {s.name: s for s in calls[step - 1].sources}


def bare_pair(watch_accessed: bool = True, in_function: bool = False) -> list:
    import tensorflow as tf

    w, s = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0], trainable=False)

    def grads():
        with tf.GradientTape(watch_accessed_variables=watch_accessed) as tape:
            if not watch_accessed:
                tape.watch(s)
            loss = tf.reduce_sum(w * s)
        return tape.gradient(loss, [w, s])

    return tf.function(grads)() if in_function else grads()


@pytest.mark.parametrize("text, in_function", [("frozen = tape", False),
                                               ("return tape.gradient", True)])  # fmt: skip
def test_non_trainable_variable_is_frozen(report, text: str, in_function: bool) -> None:
    gw, gs = bare_pair(in_function=in_function)
    assert gs is None and gw is not None
    by_name = call_at(report, text)
    assert by_name["w"].status == "ok"
    assert by_name["s"].status == "frozen" and by_name["s"].cut_points == ()
    assert not any(p.variable == "s" and p.site.endswith(f":{line_of(PROGRAM, text)}")
                   for p in report.problems)  # fmt: skip


def test_variable_kept_from_the_tape_is_disconnected_not_cut(report) -> None:
    gw, gs = bare_pair(watch_accessed=False)
    assert gw is None and gs is not None
    by_name = call_at(report, "kept = tape")
    assert by_name["s"].status == "ok"
    assert by_name["w"].status == "none:disconnected"
    assert by_name["w"].cut_points == ()
    assert "watch_accessed_variables=False" in by_name["w"].note


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_moving_statistics_are_frozen(report, training: bool) -> None:
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="a"),
                              keras.layers.BatchNormalization(name="bn")], name="net")  # fmt: skip
    x = np.arange(12, dtype="float32").reshape(4, 3)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x, training=training) ** 2)
    variables = model.get_layer("bn").variables
    bare = tape.gradient(loss, variables)
    by_name = call_at(report, "bn = tape.gradient", step=2 if training else 1)
    for v, g in zip(variables, bare, strict=True):
        if v.trainable:
            assert g is not None and by_name[v.path].status in ("ok", "zero")
        else:
            assert g is None
            assert by_name[v.path].status == "frozen" and by_name[v.path].note == (
                "not trainable: a tape watches only trainable variables"
            )
