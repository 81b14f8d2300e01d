"""``gradscope.watch()``: a block's gradient calls, reported as ``gradscope run`` reports a
program's, against bare TensorFlow; TensorFlow restored; a block inside another joins it."""

from __future__ import annotations

import runpy
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gradscope
from gradscope._src.errors import AlreadyWatching, GradscopeError, UsageError
from gradscope._src.results import run as rr
from tests.frontends.program.test_run import PROGRAMS, norms, watched

pytestmark = pytest.mark.tf


def _snapshot() -> list[tuple[bool, Any]]:
    """Each attribute gradscope may patch (``patching.ATTRIBUTES``) as it is now: own
    attribute or inherited, and the object."""
    from gradscope._src import patching

    places = [(patching.owner_of(a), a.name) for a in patching.ATTRIBUTES.values()]
    return [(name in vars(owner), vars(owner).get(name)) for owner, name in places
            if owner is not None]  # fmt: skip


@pytest.fixture
def fresh() -> Iterator[None]:
    import keras

    keras.backend.clear_session()
    yield


def _block(program: str) -> rr.RunReport:
    """The program's code run inside a watch() block, as runpy runs it for gradscope run."""
    sys.path.insert(0, str(PROGRAMS))
    try:
        with gradscope.watch() as w:
            runpy.run_path(str(PROGRAMS / program), run_name="__main__")
    finally:
        sys.path.remove(str(PROGRAMS))
    return w.report


def _calls(report: rr.RunReport) -> list[Any]:
    return [(c.site, c.api, c.mode, c.step, c.target_source, c.notes,
             [(s.name, s.status, s.shape, s.cut_points, s.note, s.fix) for s in c.sources])
            for c in report.calls]  # fmt: skip


@pytest.mark.parametrize("program", ["custom_step.py", "random_draws.py", "dcgan.py"])
def test_watch_reports_what_gradscope_run_reports(program: str, fresh: None) -> None:
    import keras

    keras.utils.set_random_seed(0)  # custom_step.py's subclassed model draws its weights
    ran, _ = watched(program)
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    block = _block(program)
    assert block.calls, "the block's gradient calls were watched"
    assert _calls(block) == _calls(ran.report)
    for a, b in zip(block.calls, ran.report.calls, strict=True):
        assert [s.norm for s in a.sources] == pytest.approx([s.norm for s in b.sources])
    assert [(p.site, p.variable, p.kind, p.fix) for p in block.problems] == [
        (p.site, p.variable, p.kind, p.fix) for p in ran.report.problems
    ]
    assert type(block) is type(ran.report) and block.entry == rr.WATCH
    assert block.outcome == rr.FINISHED and block.exit_code == ran.report.exit_code


def test_watch_eager_tape_and_tf_function_against_bare_tensorflow(fresh: None) -> None:
    import tensorflow as tf

    w = tf.Variable([[1.0], [2.0]], name="w")
    spare = tf.Variable([3.0], name="spare")
    x = tf.constant([[1.0, -1.0], [0.5, 2.0]])

    def loss_of() -> Any:
        return tf.reduce_sum(tf.square(x @ w)) + tf.stop_gradient(tf.reduce_sum(spare))

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            loss = loss_of()
        return tape.gradient(loss, [w, spare])

    with gradscope.watch(allow_none=["spare"]) as w_:
        with tf.GradientTape() as tape:
            loss = loss_of()
        eager = tape.gradient(loss, [w, spare])
        traced = step()
    eager_call, function_call = w_.report.calls
    assert (eager_call.mode, function_call.mode) == (rr.EAGER, rr.FUNCTION)
    for call, grads in ((eager_call, eager), (function_call, traced)):
        assert [s.name for s in call.sources] == ["w", "spare"]
        assert grads[1] is None  # bare TensorFlow's answer, unchanged by watching
        assert call.sources[0].status == "ok"
        assert call.sources[0].norm == pytest.approx(norms(grads)[0], rel=1e-6)
        assert call.sources[1].status == "none:stopped"
        assert [c.op for c in call.sources[1].cut_points] == ["StopGradient"]
    assert w_.report.problems == ()  # spare is allowed


def test_watch_tf_compat_v1_graph(fresh: None) -> None:
    import tensorflow as tf

    v1 = tf.compat.v1
    with tf.Graph().as_default(), gradscope.watch() as w:
        x = v1.placeholder(tf.float32, [None, 2])
        a = v1.get_variable("a", initializer=tf.constant([[1.0], [2.0]]))
        b = v1.get_variable("b", initializer=tf.constant([[3.0], [4.0]]))
        loss = tf.reduce_sum(x @ a) + tf.reduce_sum(tf.cast(tf.argmax(x @ b, 1), tf.float32))
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[a, b])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train, {x: np.ones((3, 2), np.float32)})
            bare = v1.gradients(loss, [a, b])
    assert bare[1] is None  # TensorFlow's own answer
    (call,) = [c for c in w.report.calls if c.api == "minimize"]
    assert call.mode == rr.GRAPH and call.step == 1
    assert [(s.name, s.status) for s in call.sources] == [
        ("a", "ok"), ("b", "none:nondifferentiable")]  # fmt: skip
    assert call.sources[0].norm == pytest.approx(float(np.linalg.norm([[3.0], [3.0]])))
    (again,) = [c for c in w.report.calls if c.api == "tf.gradients"]  # built, never run
    assert [(s.name, s.status) for s in again.sources] == [
        ("a", "unknown"), ("b", "none:nondifferentiable")]  # fmt: skip
    assert [(p.site, p.variable, str(p.kind)) for p in w.report.problems] == [
        (call.site, "b", "unexpected-none"), (again.site, "b", "unexpected-none")]  # fmt: skip


def test_watch_never_stops_the_block_and_watches_steps_executions(fresh: None) -> None:
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="d")])
    model.compile("sgd", "mse")
    x, y = np.ones((8, 3), np.float32), np.ones((8, 1), np.float32)
    with gradscope.watch(steps=2) as w:
        history = model.fit(x, y, batch_size=2, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3  # 12 steps ran; none was stopped
    assert [c.step for c in w.report.calls] == [1, 2]
    assert w.report.outcome == rr.FINISHED and w.report.exit_code == 0


def _train(watching: bool) -> list[np.ndarray]:
    """A seeded fit with dropout and a custom step with random draws, watched or not."""
    import contextlib

    import keras
    import tensorflow as tf

    keras.backend.clear_session()
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])  # fmt: skip
    model.compile(keras.optimizers.Adam(0.01), "mse")
    x = np.random.default_rng(0).normal(size=(32, 6)).astype("float32")
    y = np.random.default_rng(1).normal(size=(32, 1)).astype("float32")
    opt = keras.optimizers.SGD(0.05)

    @tf.function
    def step(xb: Any) -> Any:
        with tf.GradientTape() as tape:
            noisy = xb + tf.random.normal(tf.shape(xb), stddev=0.1)
            loss = tf.reduce_mean(tf.square(model(noisy, training=True) - y[:8]))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return loss

    block = gradscope.watch(steps=2) if watching else contextlib.nullcontext()
    with block:
        model.fit(x, y, batch_size=8, epochs=2, verbose=0)
        for _ in range(3):
            step(tf.constant(x[:8]))
    return [np.array(v) for v in model.get_weights()]


def test_watching_changes_no_random_draw_loss_or_update(fresh: None) -> None:
    bare = _train(watching=False)
    seen = _train(watching=True)
    assert len(bare) == len(seen)
    for a, b in zip(bare, seen, strict=True):
        assert a.tobytes() == b.tobytes()  # bit for bit
    assert not all(np.array_equal(a, b) for a, b in zip(bare, _untrained(), strict=True))


def _untrained() -> list[np.ndarray]:
    import keras

    keras.backend.clear_session()
    keras.utils.set_random_seed(7)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dropout(0.5), keras.layers.Dense(1)])  # fmt: skip
    return [np.array(v) for v in model.get_weights()]


def test_watch_restores_tensorflow_exactly_also_when_the_block_raises(fresh: None) -> None:
    import tensorflow as tf

    before = _snapshot()
    w = tf.Variable(2.0, name="w")
    with gradscope.watch() as watching:
        assert _snapshot() != before  # patched while inside
    assert _snapshot() == before
    with pytest.raises(ZeroDivisionError) as raised, gradscope.watch() as watching:
        with tf.GradientTape() as tape:
            loss = w * w
        tape.gradient(loss, w)
        _ = 1 / 0
    assert _snapshot() == before
    assert raised.value.__traceback__ is not None and "division" in str(raised.value)
    assert watching.report.outcome == rr.RAISED and watching.report.exit_code == 4
    assert [s.status for s in watching.report.calls[0].sources] == ["ok"]


def _squared(variable: Any) -> Any:
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = variable * variable
    return tape.gradient(loss, variable)


def test_a_watch_inside_a_watch_joins_it_and_reports_its_own_block(fresh: None) -> None:
    """Issue 42 point 4: an inner watch() (a notebook's, a test's) inside another joins it:
    no AlreadyWatching, the code computes what it computes, the inner block reports its own
    calls and the outer all of them; TensorFlow is restored once the outer ends."""
    import tensorflow as tf

    before = _snapshot()
    w, v = tf.Variable(2.0, name="w"), tf.Variable(3.0, name="v")
    bare = [float(_squared(w)), float(_squared(v))]
    with gradscope.watch() as outer:
        first = float(_squared(w))
        with gradscope.watch(allow_none=["x"]) as inner:
            second = float(_squared(v))
        assert _snapshot() != before  # the outer block still watches
    assert _snapshot() == before
    assert [first, second] == bare == [4.0, 6.0]
    assert [[s.name for s in c.sources] for c in inner.report.calls] == [["v"]]
    assert [[s.name for s in c.sources] for c in outer.report.calls] == [["w"], ["v"]]
    assert inner.report.outcome == outer.report.outcome == rr.FINISHED
    assert [s.norm for c in outer.report.calls for s in c.sources] == pytest.approx(bare)
    assert issubclass(AlreadyWatching, GradscopeError)  # kept for programs that catch it


def test_a_script_that_watches_itself_runs_to_its_end_under_gradscope_run(fresh: None) -> None:
    """Issue 42 point 4: a script with a watch() block of its own (a notebook exported) got
    AlreadyWatching raised into it under gradscope run (exit 4) where python runs it to its
    end. It prints what python prints, its block reports its own call, run reports both."""
    from tests.frontends.program.test_run import unwatched

    plain = unwatched("uses_watch.py")
    assert plain.splitlines()[-2:] == ["block [[('w', 'ok')]]", "end"]
    outcome, printed = watched("uses_watch.py")
    assert printed == plain
    assert outcome.error is None and outcome.report.outcome == rr.FINISHED
    assert [[s.name for s in c.sources] for c in outcome.report.calls] == [["v"], ["w"]]
    assert outcome.report.exit_code == 0


def test_gradscope_run_inside_a_watch_block_reports_its_program(fresh: None) -> None:
    """``gradscope.run()`` of a program (itself with a watch() block) inside a watch() block
    (a test under pytest --gradscope): three blocks of one watch, each reporting its own."""
    from tests.frontends.program.test_run import unwatched

    plain = unwatched("uses_watch.py")
    with gradscope.watch() as outer:
        outcome, printed = watched("uses_watch.py")
    assert printed == plain
    assert [[s.name for s in c.sources] for c in outcome.report.calls] == [["v"], ["w"]]
    assert [[s.name for s in c.sources] for c in outer.report.calls] == [["v"], ["w"]]


def test_two_threads_each_in_a_watch_block_report_their_own_calls(fresh: None) -> None:
    import tensorflow as tf

    before = _snapshot()
    variables = {"a": tf.Variable(2.0, name="a"), "b": tf.Variable(5.0, name="b")}
    bare = {n: float(_squared(v)) for n, v in variables.items()}
    inside, go = threading.Barrier(2), threading.Event()
    reports: dict[str, rr.RunReport] = {}
    grads: dict[str, float] = {}
    errors: list[BaseException] = []

    def worker(name: str) -> None:
        try:
            with gradscope.watch() as block:
                inside.wait(timeout=60)  # both blocks are open at once
                grads[name] = float(_squared(variables[name]))
                if name == "a":
                    go.set()
                else:
                    go.wait(timeout=60)
            reports[name] = block.report
        except BaseException as exc:  # the test fails below with it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in variables]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and grads == bare
    for name, report in reports.items():
        assert [[s.name for s in c.sources] for c in report.calls] == [[name]], name
        assert report.outcome == rr.FINISHED
    assert _snapshot() == before


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"steps": 0}, "steps must be a whole number of at least 1, saw 0"),
        ({"steps": True}, "steps must be a whole number of at least 1, saw True"),
        ({"steps": "3"}, "steps must be a whole number of at least 1, saw '3'"),
        ({"allow_none": "gen/*"}, "allow_none must be a list of globs, saw the string 'gen/*' "
                                    "(write ['gen/*'])"),
        ({"allow_none": 3}, "allow_none must be a list of globs, saw 3"),
        ({"allow_none": ["a", 1]}, "allow_none must hold strings (globs of variable names), "
                                   "saw 1"),
    ],
)  # fmt: skip
def test_watch_options_are_checked(options: dict[str, Any], said: str) -> None:
    with pytest.raises(UsageError) as refused:
        gradscope.watch(**options)
    assert str(refused.value) == f"gradscope.watch: {said}"


def test_report_is_read_after_the_block(fresh: None) -> None:
    block = gradscope.watch()
    line = sys._getframe().f_lineno - 1
    with pytest.raises(UsageError, match="the report is made when the with block ends"):
        _ = block.report
    with block:
        pass
    assert block.report.program.endswith(f"{Path(__file__).name}:{line}")
    assert block.report.calls == () and block.report.to_dict()["entry"] == "watch"
    with pytest.raises(UsageError, match="entered already"), block:
        pass


def test_a_model_trained_before_the_block_is_watched_in_it(fresh: None) -> None:
    """The notebook case: fit, then the same fit again inside a watch()."""
    import keras
    import tensorflow as tf

    inputs = keras.Input((4,))
    body = keras.layers.Dense(8, name="body")(inputs)
    model = keras.Model(inputs, [keras.layers.Dense(1, name="score")(body),
                                 keras.layers.Dense(1, name="aux")(body)])  # fmt: skip
    model.compile("sgd", loss=["mse", None])
    x, y = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    model.fit(x, y, epochs=1, verbose=0)
    before = model.train_function
    with gradscope.watch() as w:
        model.fit(x, y, epochs=1, verbose=0)
    (call,) = w.report.calls
    with tf.GradientTape() as tape:  # bare TensorFlow: the same loss and variables
        loss = tf.reduce_mean(tf.square(model(x)[0] - y))
    bare = tape.gradient(loss, model.trainable_variables)
    assert [s.name for s in call.sources] == [v.path for v in model.trainable_variables]
    assert [s.status == "ok" for s in call.sources] == [g is not None for g in bare]
    assert model.train_function is before  # the model's own trace is back


def test_a_gradscope_failure_never_stops_the_block(
    fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tensorflow as tf

    from gradscope._src.analysis import run as run_policy
    from gradscope._src.watcher import analyse

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a gradscope bug")

    monkeypatch.setattr(analyse, "analyse", broken)  # while watching a call
    w = tf.Variable(3.0, name="w")
    with gradscope.watch() as block:
        with tf.GradientTape() as tape:
            loss = w * w
        grad = tape.gradient(loss, w)
    assert float(grad) == 6.0  # the program's own answer
    assert any("could not analyse this call" in n for n in block.report.notes)
    monkeypatch.setattr(run_policy, "problems_of", broken)  # while making the report
    with gradscope.watch() as block:
        with tf.GradientTape() as tape:
            loss = w * w
        grad = tape.gradient(loss, w)
    assert float(grad) == 6.0
    assert block.report.notes == (
        "gradscope could not make this report (RuntimeError: a gradscope bug); please report it",
    )


def test_a_model_built_in_an_imported_module_gets_the_users_lines(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A functional model built (before the block) in a module the user imports, with an
    output no loss reads: every line the report names is the user's own, never gradscope's
    and never "an unknown line" (the Keras step ran under watch()'s own wrapper of fit)."""
    import json
    import re

    (tmp_path / "heads.py").write_text(
        "import keras\n\n\n"
        "def two_heads():\n"
        "    inputs = keras.Input((4,))\n"
        "    h = keras.layers.Dense(8, name='body')(inputs)\n"
        "    a = keras.layers.Dense(1, name='a')(h)\n"
        "    b = keras.layers.Dense(1, name='b')(h) + 1.0\n"
        "    model = keras.Model(inputs, [a, b])\n"
        "    model.compile(optimizer='sgd', loss=['mse', None])\n"
        "    return model\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import heads  # type: ignore[import-not-found]

    model = heads.two_heads()
    x, y = np.ones((8, 4), np.float32), np.ones((8, 1), np.float32)
    with gradscope.watch() as w:
        model.fit(x, [y, y], epochs=1, verbose=0)
    (call,) = w.report.calls
    assert [s.name for s in call.sources if s.status == "none:disconnected"] == [
        "b/kernel",
        "b/bias",
    ]
    text = json.dumps(w.report.to_dict())
    assert "unknown line" not in text
    here = Path(__file__).name
    for file in re.findall(r"([\w./\\-]+\.py):\d+", text):
        assert Path(file).name in (here, "heads.py"), file
