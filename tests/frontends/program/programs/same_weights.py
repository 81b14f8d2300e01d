"""Small seeded Keras trainings whose final weights must not depend on who watches them.

``python same_weights.py OUT [--monitor] [CASE...]`` runs each case (all by default, in this
order) and writes ``OUT/CASE.npz``: every weight of the model and of its optimizer after
training, by index; and ``OUT/CASE-last.json``: the weights the last ``fit()`` changed and
those trainable at its end. With ``--monitor`` one ``gradscope.keras.Monitor(every=1)`` per
case watches the ``fit()`` calls the case names, writing ``OUT/CASE.json``. The first case
runs before gradscope is imported at all (the Monitor then learns the flags of the step traced
before from Keras' optimizer). Under ``gradscope run`` the same program runs unchanged.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import tensorflow as tf

# Two logical CPU devices for the MirroredStrategy case, as `gradscope run --replicas 2` makes.
_cpu = tf.config.list_physical_devices("CPU")[0]
if len(tf.config.get_logical_device_configuration(_cpu) or []) < 2:
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(2)]
    )

import keras  # noqa: E402

OUT = sys.argv[1]
MONITOR = "--monitor" in sys.argv[2:]
CHOSEN = [a for a in sys.argv[2:] if not a.startswith("--")]
MONITORS: dict[str, keras.callbacks.Callback] = {}
TRAINABLE: dict[str, set[str]] = {}  # case -> the weights trainable at some fit()'s start or end


def data(rows: int = 24, width: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows, width)).astype("float32")
    return x, (x @ rng.normal(size=(width, 2))).astype("float32")


def callbacks(case: str, watched: bool) -> list[keras.callbacks.Callback]:
    """The case's one Monitor, for a fit() it watches (with ``--monitor``)."""
    if not (MONITOR and watched):
        return []
    if case not in MONITORS:
        from gradscope.keras import Monitor

        MONITORS[case] = Monitor(every=1, timeline=os.path.join(OUT, f"{case}.json"))
    return [MONITORS[case]]


def mlp(*middle: keras.layers.Layer) -> keras.Model:
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu", name="base")(inputs)
    for layer in middle:
        hidden = layer(hidden)
    return keras.Model(inputs, keras.layers.Dense(2, name="head")(hidden))


def fit(model: keras.Model, case: str, watched: bool = True, rows: int = 24,
        **kwargs: object) -> None:  # fmt: skip
    x, y = data(rows)
    TRAINABLE.setdefault(case, set()).update(w.path for w in model.trainable_weights)
    before = [w.numpy().tobytes() for w in model.weights]
    model.fit(x, y, batch_size=kwargs.pop("batch_size", 8), epochs=2, verbose=0,
              callbacks=callbacks(case, watched), **kwargs)  # fmt: skip
    TRAINABLE.setdefault(case, set()).update(w.path for w in model.trainable_weights)
    last = {"changed": [w.path for w, b in zip(model.weights, before, strict=True)
                        if w.numpy().tobytes() != b],
            "trainable": [w.path for w in model.trainable_weights],
            "ever_trainable": sorted(TRAINABLE[case])}  # fmt: skip
    with open(os.path.join(OUT, f"{case}-last.json"), "w") as out:
        json.dump(last, out)


def freeze(model: keras.Model, *names: str, trainable: bool = False) -> None:
    for name in names:
        model.get_layer(name).trainable = trainable


def frozen() -> keras.Model:
    """The fine-tuning bug: layers frozen after fit() without compile() (the Monitor on the
    second fit() only); Keras' traced step keeps training them, its batch norm in training
    mode."""
    model = mlp(keras.layers.BatchNormalization(name="norm"))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    fit(model, "frozen", watched=False)
    freeze(model, "base", "norm")
    fit(model, "frozen")
    return model


def unfrozen() -> keras.Model:
    """A layer unfrozen after the trace: Keras' traced step leaves it out."""
    model = mlp()
    freeze(model, "base")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    fit(model, "unfrozen", watched=False)
    freeze(model, "base", trainable=True)
    fit(model, "unfrozen")
    return model


def watched_then_frozen() -> keras.Model:
    """The Monitor on the first fit() only: the second, unwatched, runs Keras' own step as
    traced at the first (still training the frozen layers)."""
    model = mlp(keras.layers.BatchNormalization(name="norm"))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    fit(model, "watched_then_frozen")
    freeze(model, "base", "norm")
    fit(model, "watched_then_frozen", watched=False)
    return model


def eager() -> keras.Model:
    """run_eagerly: each step reads the flags afresh, with or without the Monitor."""
    model = mlp(keras.layers.BatchNormalization(name="norm"))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", run_eagerly=True)
    fit(model, "eager")
    freeze(model, "base", "norm")
    fit(model, "eager", watched=False)
    return model


def dropout() -> keras.Model:
    """Dropout, momentum, and a layer frozen between two watched fit() calls."""
    model = mlp(keras.layers.Dropout(0.5, name="drop"))
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    fit(model, "dropout")
    freeze(model, "head")
    fit(model, "dropout")
    return model


def mixed() -> keras.Model:
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = mlp(keras.layers.Dropout(0.25, name="drop"))
        model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        fit(model, "mixed")
    finally:
        keras.mixed_precision.set_global_policy("float32")
    return model


def per_execution() -> keras.Model:
    """Three steps an execution; 27 rows in batches of 6: each epoch's last execution is
    partial."""
    model = mlp(keras.layers.Dropout(0.5, name="drop"))
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse", steps_per_execution=3)
    fit(model, "per_execution", rows=27, batch_size=6)
    return model


def xla() -> keras.Model:
    model = mlp(keras.layers.BatchNormalization(name="norm"), keras.layers.Dropout(0.5))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", jit_compile=True)
    fit(model, "xla")
    return model


def mirrored() -> keras.Model:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = mlp(keras.layers.BatchNormalization(name="norm"), keras.layers.Dropout(0.5))
        model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    fit(model, "mirrored")
    return model


CASES = {f.__name__: f for f in (frozen, unfrozen, watched_then_frozen, eager, dropout, mixed,
                                 per_execution, xla, mirrored)}  # fmt: skip

if __name__ == "__main__":
    for name in CHOSEN or CASES:
        if os.environ.get("SAME_WEIGHTS_TIMES"):
            print(name, __import__("time").process_time(), file=sys.stderr)
        keras.utils.set_random_seed(0)
        try:
            model = CASES[name]()
        except Exception as error:  # the others still run; the missing weights tell
            print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
            continue
        weights = [*model.weights, *model.optimizer.variables]
        np.savez(os.path.join(OUT, f"{name}.npz"),
                 *[np.asarray(keras.ops.convert_to_numpy(w)) for w in weights])  # fmt: skip
