"""The Keras Monitor's records where the review found them wrong: a sparse gradient with
TensorBoard histograms, several steps per execution, step 1, the first NaN step. Every number
against bare TensorFlow on the same weights and batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.tf

X = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(64, 1)).astype("float32")
IDS = np.random.RandomState(0).randint(0, 1000, size=(32, 3)).astype("int32")
IDS_Y = np.random.RandomState(1).randn(32, 1).astype("float32")


def _embedding() -> Any:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((3,), dtype="int32"),
            keras.layers.Embedding(1000, 4, name="emb"),
            keras.layers.Flatten(),
            keras.layers.Dense(1, name="d"),
        ]
    )
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


@pytest.fixture(scope="module")
def embedding_bare() -> list[list[tuple[bool, float, float]]]:
    """Per step of the embedding fit (batch 8, no shuffle), bare TensorFlow's gradients:
    whether each is IndexedSlices, its dense zero fraction and norm."""
    import keras
    import tensorflow as tf

    model, out = _embedding(), []
    optimizer = keras.optimizers.SGD(0.1)
    for b in range(4):
        x, y = IDS[b * 8 : (b + 1) * 8], IDS_Y[b * 8 : (b + 1) * 8]
        with tf.GradientTape() as tape:
            loss = keras.losses.MeanSquaredError()(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        step = []
        for g in grads:
            dense = tf.convert_to_tensor(g).numpy()
            norm = float(np.linalg.norm(dense.astype(np.float64)))
            step.append((isinstance(g, tf.IndexedSlices), float(np.mean(dense == 0)), norm))
        out.append(step)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return out


@pytest.mark.parametrize("board", [False, True], ids=["timeline", "tensorboard"])
def test_tensorboard_histograms_record_a_sparse_gradient_as_bare_tensorflow_gives_it(
    tmp_path: Path, embedding_bare: list[list[tuple[bool, float, float]]], board: bool
) -> None:
    import tensorflow as tf

    from gradscope.keras import Monitor

    model = _embedding()
    tensorboard = tmp_path / "tb" if board else None
    monitor = Monitor(every=1, timeline=tmp_path / "t.json", tensorboard=tensorboard)
    model.fit(IDS, IDS_Y, batch_size=8, shuffle=False, verbose=0, callbacks=[monitor])
    steps = json.loads((tmp_path / "t.json").read_text())["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    names = [v.path for v in model.trainable_variables]  # embeddings first
    for record, bare in zip(steps, embedding_bare, strict=True):
        for name, (sparse, zeros, norm) in zip(names, bare, strict=True):
            got = record["variables"][name]
            assert got["sparse"] is sparse, name
            assert got["zero_fraction"] == pytest.approx(zeros), name
            assert got["norm"] == pytest.approx(norm, rel=1e-5), name
    assert embedding_bare[0][0][0]  # the embeddings' gradient is sparse...
    assert monitor.findings == []  # ...so mostly zero is no `dead` (README: dense only)
    if board:  # and the histograms the raw gradients were kept for are written
        tags = set()
        for event in (tmp_path / "tb").iterdir():
            for e in tf.compat.v1.train.summary_iterator(str(event)):
                tags.update(v.tag for v in e.summary.value)
        assert f"gradients/{names[0]}" in tags


def _small(steps_per_execution: int, learning_rate: float = 0.1) -> Any:
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)]
    )
    model.compile(keras.optimizers.SGD(learning_rate), "mse",
                  steps_per_execution=steps_per_execution)  # fmt: skip
    return model


@pytest.fixture(scope="module")
def replay() -> dict[int, tuple[float, list[float]]]:
    """Bare TensorFlow's loss and gradient norms of each of the 8 steps (batch 8, SGD)."""
    import keras
    import tensorflow as tf

    model, optimizer, out = _small(1), keras.optimizers.SGD(0.1), {}
    for step in range(1, 9):
        x, y = X[(step - 1) * 8 : step * 8], Y[(step - 1) * 8 : step * 8]
        with tf.GradientTape() as tape:
            loss = keras.losses.MeanSquaredError()(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        out[step] = (float(loss), [float(tf.norm(g)) for g in grads])
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return out


@pytest.fixture(scope="module")
def plain_weights() -> list[Any]:
    """The weights of the 4-steps-per-execution fit without a Monitor."""
    model = _small(4)
    model.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    return [w.numpy() for w in model.weights]


@pytest.mark.parametrize("every", [1, 2, 3, 4])
def test_every_due_step_of_an_execution_is_recorded_with_its_own_numbers(
    every: int, replay: dict[int, tuple[float, list[float]]], plain_weights: list[Any]
) -> None:
    from gradscope.keras import Monitor

    model = _small(4)
    monitor = Monitor(every=every)
    model.fit(X, Y, batch_size=8, shuffle=False, verbose=0, callbacks=[monitor])
    expected = [s for s in range(1, 9) if s == 1 or s % every == 0]
    assert [s["step"] for s in monitor.steps] == expected
    names = [v.path for v in model.trainable_variables]
    for record in monitor.steps:
        loss, norms = replay[record["step"]]
        assert record["loss"] == pytest.approx(loss, rel=1e-5)
        got = [record["variables"][n]["norm"] for n in names]
        assert got == pytest.approx(norms, rel=1e-5)
    for plain, watched in zip(plain_weights, model.weights, strict=True):
        np.testing.assert_array_equal(plain, watched.numpy())  # training unchanged, bit for bit


def test_the_first_nan_step_inside_an_execution_is_the_one_bare_tensorflow_gives() -> None:
    import keras
    import tensorflow as tf

    from gradscope.keras import Monitor

    x = np.abs(X[:48]) + 0.5
    x[8:16] = 0.0  # batch 2 (step 2, inside the first execution): sqrt'(0) is infinite
    y = np.ones((48, 1), "float32")

    def model() -> Any:
        keras.utils.set_random_seed(0)
        inputs = keras.Input((4,))
        h = keras.layers.Dense(4, kernel_initializer="identity", use_bias=False, name="pre")(inputs)
        out = keras.layers.Dense(1, name="d")(keras.layers.Lambda(tf.sqrt)(h))
        m = keras.Model(inputs, out)
        m.compile(keras.optimizers.SGD(0.0), "mse", steps_per_execution=4)  # weights fixed
        return m

    bare, first = model(), None
    for step in range(1, 7):
        with tf.GradientTape() as tape:
            loss = keras.losses.MeanSquaredError()(y[(step - 1) * 8 : step * 8],
                                                   bare(x[(step - 1) * 8 : step * 8]))  # fmt: skip
        (kernel,) = tape.gradient(loss, [bare.get_layer("pre").kernel])
        if first is None and not np.all(np.isfinite(kernel.numpy())):
            first = step
    assert first == 2
    watched = model()
    monitor = Monitor(every=1)
    watched.fit(x, y, batch_size=8, shuffle=False, verbose=0, callbacks=[monitor])
    assert [s["step"] for s in monitor.steps] == [1, 2, 3, 4, 5, 6]
    nan = [f for f in monitor.findings if f.kind == "nan" and f.variable == "pre/kernel"]
    assert [f.step for f in nan] == [first]


def test_a_timeline_unwritable_at_the_end_is_kept_and_the_error_says_where(
    tmp_path: Path,
) -> None:
    import keras

    from gradscope.keras import Monitor

    path = tmp_path / "out" / "t.json"

    class Spoil(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_end(self, logs: Any = None) -> None:  # before the Monitor's
            (tmp_path / "out").rmdir()
            (tmp_path / "out").write_text("now a file")

    model = _small(1)
    (tmp_path / "out").mkdir()
    monitor = Monitor(every=4, timeline=path)
    with pytest.raises(OSError, match=r"could not write the timeline to .*t\.json") as raised:
        model.fit(X, Y, batch_size=8, shuffle=False, verbose=0, callbacks=[Spoil(), monitor])
    spare = str(raised.value).split("written to '")[1].split("'")[0]
    kept = json.loads(Path(spare).read_text())
    Path(spare).unlink()
    assert [s["step"] for s in kept["steps"]] == [1, 4, 8] == [s["step"] for s in monitor.steps]


def test_outputs_that_became_unwritable_stop_the_fit_before_its_first_step(
    tmp_path: Path,
) -> None:
    from gradscope.keras import Monitor

    model = _small(1)
    start = [w.numpy() for w in model.weights]
    monitor = Monitor(every=1, tensorboard=tmp_path / "tb")
    (tmp_path / "tb").write_text("a file now")
    with pytest.raises(NotADirectoryError, match=r"TensorBoard files to .*tb"):
        model.fit(X, Y, batch_size=8, verbose=0, callbacks=[monitor])
    assert int(model.optimizer.iterations.numpy()) == 0
    assert all(np.array_equal(a, b.numpy()) for a, b in zip(start, model.weights, strict=True))
