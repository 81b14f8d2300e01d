"""Small seeded Keras trainings whose final weights must not depend on who watches them.

``python same_weights.py OUT [--monitor|--watch] [CASE...]`` runs each case (all by default,
in this order) and writes ``OUT/CASE.npz``: every weight of the model and of its optimizer
after training, by index; and ``OUT/CASE-last.json``: the weights the last ``fit()`` changed
and those trainable at its end. With ``--monitor`` one ``gradscope.keras.Monitor(every=1)`` per
case watches the ``fit()`` calls the case names, writing ``OUT/CASE.json``; with ``--watch``
each case runs inside ``gradscope.watch()``. The first case
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
WATCH = "--watch" in sys.argv[2:]
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


class TransformerBlock(keras.layers.Layer):
    """keras-io's text classification Transformer block, small."""

    def __init__(self, embed_dim: int, num_heads: int, ff_dim: int, rate: float = 0.1) -> None:
        super().__init__()
        self.att = keras.layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([keras.layers.Dense(ff_dim, activation="relu"),
                                     keras.layers.Dense(embed_dim)])  # fmt: skip
        self.layernorm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = keras.layers.Dropout(rate)
        self.dropout2 = keras.layers.Dropout(rate)

    def call(self, inputs: tf.Tensor) -> tf.Tensor:
        attn_output = self.dropout1(self.att(inputs, inputs))
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.dropout2(self.ffn(out1))
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(keras.layers.Layer):
    def __init__(self, maxlen: int, vocab_size: int, embed_dim: int) -> None:
        super().__init__()
        self.token_emb = keras.layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = keras.layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x: tf.Tensor) -> tf.Tensor:
        positions = self.pos_emb(keras.ops.arange(start=0, stop=keras.ops.shape(x)[-1], step=1))
        return self.token_emb(x) + positions


def transformer() -> keras.Model:
    """keras-io's text classification with a Transformer (token and position embeddings,
    multi-head attention, layer norms, dropout, Adam), on 24 random sequences of 10 tokens:
    the attention's key bias gets a gradient that is zero up to rounding."""
    maxlen, vocab = 10, 50
    inputs = keras.Input(shape=(maxlen,))
    x = TokenAndPositionEmbedding(maxlen, vocab, 8)(inputs)
    x = TransformerBlock(8, 2, 8)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dropout(0.1)(x)
    x = keras.layers.Dense(6, activation="relu")(x)
    outputs = keras.layers.Dense(2, activation="softmax")(keras.layers.Dropout(0.1)(x))
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, vocab, size=(24, maxlen))
    labels = (tokens[:, 0] > vocab // 2).astype("int32")
    model.fit(tokens, labels, batch_size=8, epochs=2, verbose=0,
              callbacks=callbacks("transformer", True))  # fmt: skip
    return model


class Distiller(keras.Model):
    """keras-io's knowledge distillation: a custom train_step training the student against
    the labels and the frozen teacher's softened predictions."""

    def __init__(self, student: keras.Model, teacher: keras.Model) -> None:
        super().__init__()
        self.teacher, self.student = teacher, student

    def compile(self, optimizer: keras.optimizers.Optimizer, metrics: list[object],
                student_loss_fn: keras.losses.Loss, distillation_loss_fn: keras.losses.Loss,
                alpha: float = 0.1, temperature: float = 3) -> None:  # fmt: skip
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn, self.distillation_loss_fn = student_loss_fn, distillation_loss_fn
        self.alpha, self.temperature = alpha, temperature

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return self.student(x)

    def train_step(self, data: tuple[tf.Tensor, tf.Tensor]) -> dict[str, tf.Tensor]:
        x, y = data
        teacher_predictions = self.teacher(x, training=False)
        with tf.GradientTape() as tape:
            student_predictions = self.student(x, training=True)
            student_loss = self.student_loss_fn(y, student_predictions)
            distillation_loss = self.distillation_loss_fn(
                tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                tf.nn.softmax(student_predictions / self.temperature, axis=1),
            )
            loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        trainable_vars = self.student.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars, strict=True))
        for metric in self.metrics:
            if metric.name != "loss":
                metric.update_state(y, student_predictions)
        return {"student_loss": student_loss, "distillation_loss": distillation_loss}


def small_cnn(name: str, filters: int) -> keras.Model:
    return keras.Sequential([
        keras.Input(shape=(8, 8, 1)),
        keras.layers.Conv2D(filters, (3, 3), strides=(2, 2), padding="same"),
        keras.layers.LeakyReLU(negative_slope=0.2),
        keras.layers.MaxPooling2D(pool_size=(2, 2), strides=(1, 1), padding="same"),
        keras.layers.Conv2D(filters, (3, 3), strides=(2, 2), padding="same"),
        keras.layers.Flatten(),
        keras.layers.Dense(4),
    ], name=name)  # fmt: skip


def distiller() -> keras.Model:
    """keras-io's knowledge distillation on 24 random 8x8 images: the student distilled from
    a frozen teacher (as it was made: its training is not the point)."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(24, 8, 8, 1)).astype("float32")
    y = rng.integers(0, 4, size=(24,))
    teacher, student = small_cnn("teacher", 8), small_cnn("student", 4)
    teacher.trainable = False
    model = Distiller(student=student, teacher=teacher)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        distillation_loss_fn=keras.losses.KLDivergence(),
        alpha=0.1,
        temperature=10,
    )
    model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=callbacks("distiller", True))
    return model


CASES = {f.__name__: f for f in (frozen, unfrozen, watched_then_frozen, eager, dropout, mixed,
                                 per_execution, xla, mirrored, transformer,
                                 distiller)}  # fmt: skip


def run(name: str) -> None:
    """Run case ``name`` from seed 0 and write its weights (a failing case writes none: the
    missing weights tell); with ``--watch``, inside ``gradscope.watch()``."""
    if os.environ.get("SAME_WEIGHTS_TIMES"):
        print(name, __import__("time").process_time(), file=sys.stderr)
    keras.utils.set_random_seed(0)
    try:
        if WATCH:
            import gradscope

            with gradscope.watch():
                model = CASES[name]()
        else:
            model = CASES[name]()
    except Exception as error:  # the others still run
        print(f"{name}: {type(error).__name__}: {error}", file=sys.stderr)
        return
    weights = [*model.weights, *model.optimizer.variables]
    np.savez(os.path.join(OUT, f"{name}.npz"),
             *[np.asarray(keras.ops.convert_to_numpy(w)) for w in weights])  # fmt: skip


if __name__ == "__main__":
    for case in CHOSEN or CASES:
        run(case)
