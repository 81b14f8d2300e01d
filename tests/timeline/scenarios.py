"""Small real models trained under the Monitor, shared by the timeline, plot and check tests.

Each scenario trains once per test session (``lru_cache``) and returns its timeline dictionary
and the path it was written to; the TensorBoard directory sits next to it.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(tempfile.mkdtemp(prefix="gradscope-timeline-tests-"))
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)


def data(
    n: int = 256, features: int = 8, seed: int = 0
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Inputs and a learnable target (a noisy linear function)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, features)).astype("float32")
    w = rng.normal(size=(features, 1)).astype("float32")
    return x, (x @ w + 0.1 * rng.normal(size=(n, 1))).astype("float32")


@dataclass
class Run:
    """A model trained under the Monitor, with what a test needs to recompute its gradients."""

    timeline: dict[str, Any]
    path: Path
    model: Any
    x: Any
    y: Any
    batch: int
    before: dict[int, list[Any]] = field(default_factory=dict)  # step -> weights before it
    after: dict[int, list[Any]] = field(default_factory=dict)  # step -> weights after it

    def batch_of(self, step: int) -> tuple[Any, Any]:
        """The (x, y) batch of a step (fit ran with shuffle=False)."""
        per_epoch = -(-len(self.x) // self.batch)
        start = ((step - 1) % per_epoch) * self.batch
        cut = slice(start, start + self.batch)
        ys = [t[cut] for t in self.y] if isinstance(self.y, list) else self.y[cut]
        return self.x[cut], ys


def _fit(
    name: str,
    model: Any,
    x: Any,
    y: Any,
    every: int,
    epochs: int,
    batch: int = 32,
    board: bool = True,
) -> Run:
    import keras

    from gradscope.keras import Monitor

    path = ROOT / name / "timeline.json"
    run = Run({}, path, model, x, y, batch)

    class Snapshots(keras.callbacks.Callback):  # type: ignore[misc]
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            step = int(model.optimizer.iterations.numpy()) + 1
            run.before[step] = [v.numpy() for v in model.trainable_variables]

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            step = int(model.optimizer.iterations.numpy())
            run.after[step] = [v.numpy() for v in model.trainable_variables]

    # With TensorBoard the Monitor keeps whole gradients (for histograms); without, it reduces
    # them in the traced step: both paths are tested.
    monitor = Monitor(every=every, timeline=path, tensorboard=ROOT / name / "tb" if board else None)
    model.fit(
        x,
        y,
        batch_size=batch,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        callbacks=[Snapshots(), monitor],
    )
    run.timeline = monitor.timeline
    return run


@functools.cache
def healthy(board: bool = True) -> Run:
    """A ReLU MLP learning a linear target with Adam: no finding."""
    import keras

    keras.utils.set_random_seed(1)
    x, y = data()
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(keras.optimizers.Adam(1e-2), loss="mse")
    return _fit(f"healthy-{board}", model, x, y, every=2, epochs=4, board=board)


@functools.cache
def dying_relu() -> Run:
    """A ReLU layer whose outputs a strong activity penalty drives to 0 until every unit dies."""
    import keras

    keras.utils.set_random_seed(2)
    x, y = data()
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(
                16,
                activation="relu",
                name="hidden",
                activity_regularizer=keras.regularizers.L1(3.0),
            ),
            keras.layers.Dense(1, name="head"),
        ]
    )
    model.compile(keras.optimizers.SGD(0.5), loss="mse")
    return _fit("dying", model, x, y, every=1, epochs=4)


@functools.cache
def exploding() -> Run:
    """Linear regression with a learning rate far too large: norms explode, then NaN."""
    import keras

    keras.utils.set_random_seed(3)
    x, y = data()
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, name="linear")])
    model.compile(keras.optimizers.SGD(8.0), loss="mse")
    return _fit("exploding", model, x, y, every=1, epochs=5)


@functools.cache
def conflicting(board: bool = True) -> Run:
    """Two losses on one prediction with opposite targets: their gradients point apart."""
    import keras

    keras.utils.set_random_seed(4)
    x, y = data()
    inputs = keras.Input((8,))
    hidden = keras.layers.Dense(16, activation="tanh", name="trunk")(inputs)
    up = keras.layers.Dense(1, name="up")(hidden)
    down = keras.layers.Identity(name="down")(up)
    model = keras.Model(inputs, [up, down])
    model.compile(keras.optimizers.SGD(1e-2), loss=["mse", "mse"])
    return _fit(f"conflicting-{board}", model, x, [y, -y], every=2, epochs=1, board=board)
