"""Keras programs that run unchanged on TensorFlow and on JAX (``KERAS_BACKEND``): the matrix
of ``tests/frontends/program/test_jax_matrix.py``. Each builds a model, its data and what
trains it; :func:`train` fits it one step. Only ``keras.ops`` are used, so the lines that cut
a gradient are the same lines on both backends; the custom train step computes its loss in
one method both backends' branches call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import layers, ops

BATCH = 8


def data(outputs: int = 1) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, 4)).astype("float32")
    ys = [rng.normal(size=(BATCH, 1)).astype("float32") for _ in range(outputs)]
    return x, ys[0] if outputs == 1 else ys


def seed(value: int = 0) -> None:
    """``keras.utils.set_random_seed`` without its ``import tensorflow`` on JAX (Keras seeds
    TensorFlow whenever it is installed): the JAX side proves gradscope imports none."""
    if keras.backend.backend() == "tensorflow":
        keras.utils.set_random_seed(value)
        return
    import random

    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    global_state.set_global_attribute("global_random_seed", value)
    global_state.set_global_attribute(seed_generator.GLOBAL_SEED_GENERATOR, None)
    random.seed(value)
    np.random.seed(value)


def train(model: Any, x: Any, y: Any) -> None:
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)


def healthy() -> tuple[Any, Any, Any]:
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="tanh", name="body"),
                              layers.Dense(1, name="out")], name="healthy")  # fmt: skip
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def unused_head() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="tanh", name="body")(inp)
    a = layers.Dense(1, name="a")(h)
    b = layers.Dense(1, name="b")(h)
    model = keras.Model(inp, [a, b], name="heads")
    model.compile(optimizer="sgd", loss=["mse", None])
    return (model, *data(2))


def stop_gradient() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="tanh", name="body")(inp)
    frozen = ops.stop_gradient(h)
    out = layers.Dense(1, name="out")(frozen)
    model = keras.Model(inp, out, name="stopped")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def argmax() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    scores = layers.Dense(3, name="scores")(inp)
    picked = ops.cast(ops.argmax(scores, axis=-1), "float32")
    out = layers.Dense(1, name="out")(ops.expand_dims(picked, -1))
    model = keras.Model(inp, out, name="argmax")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def rounded() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(4, name="body")(inp)
    whole = ops.round(h)
    out = layers.Dense(1, name="out")(whole)
    model = keras.Model(inp, out, name="rounded")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def integer_cast() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(4, name="body")(inp)
    counts = ops.cast(h * 10.0, "int32")
    back = ops.cast(counts, "float32")
    out = layers.Dense(1, name="out")(back)
    model = keras.Model(inp, out, name="cast")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def comparison() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(4, name="body")(inp)
    gate = layers.Dense(4, name="gate")(inp)
    mask = ops.cast(ops.greater(gate, 0.0), "float32")
    out = layers.Dense(1, name="out")(h * mask)
    model = keras.Model(inp, out, name="masked")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def frozen_layer() -> tuple[Any, Any, Any]:
    body = layers.Dense(8, activation="tanh", name="body")
    model = keras.Sequential([keras.Input((4,)), body, layers.Dense(1, name="out")],
                             name="frozen")  # fmt: skip
    body.trainable = False
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def trainable_after_compile() -> tuple[Any, Any, Any]:
    model = keras.Sequential([keras.Input((4,)), layers.Dense(8, activation="tanh", name="body"),
                              layers.Dense(1, name="out")], name="late")  # fmt: skip
    model.compile(optimizer="sgd", loss="mse")
    model.get_layer("body").trainable = False
    return (model, *data())


def lambda_layer() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(4, name="body")(inp)
    snapped = layers.Lambda(lambda t: ops.round(t), name="snap")(h)
    out = layers.Dense(1, name="out")(snapped)
    model = keras.Model(inp, out, name="lambda")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


@ops.custom_gradient
def clipped(x: Any) -> Any:
    def grad(*args: Any, upstream: Any = None) -> Any:
        if upstream is None:
            (upstream,) = args
        return ops.clip(upstream, -0.1, 0.1)

    return x, grad


class Clip(layers.Layer):
    def call(self, x: Any) -> Any:
        return clipped(x)


def custom_gradient() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(4, name="body")(inp)
    out = layers.Dense(1, name="out")(Clip(name="clip")(h))
    model = keras.Model(inp, out, name="custom")
    model.compile(optimizer="sgd", loss="mse")
    return (model, *data())


def mixed_precision() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="tanh", name="body", dtype="mixed_float16")(inp)
    head = layers.Dense(1, name="head", dtype="mixed_float16")(h)
    spare = layers.Dense(1, name="spare", dtype="mixed_float16")(h)
    model = keras.Model(inp, [head, spare], name="mixed")
    model.compile(optimizer="sgd", loss=["mse", None])
    return (model, *data(2))


class Subclassed(keras.Model):
    def __init__(self) -> None:
        super().__init__(name="subclassed")
        self.body = layers.Dense(8, activation="tanh", name="body")
        self.skipped = layers.Dense(8, name="skipped")
        self.out = layers.Dense(1, name="out")

    def call(self, x: Any) -> Any:
        return self.out(self.body(x))


def subclassed() -> tuple[Any, Any, Any]:
    model = Subclassed()
    model.skipped.build((None, 4))
    model.compile(optimizer="sgd", loss="mse")
    x, y = data()
    model(x)
    return model, x, y


def shared_layer() -> tuple[Any, Any, Any]:
    left, right = keras.Input((4,)), keras.Input((4,))
    shared = layers.Dense(4, name="shared")
    gated = ops.stop_gradient(shared(right))
    out = layers.Dense(1, name="out")(ops.concatenate([shared(left), gated], -1))
    model = keras.Model([left, right], out, name="siamese")
    model.compile(optimizer="sgd", loss="mse")
    x, y = data()
    return model, [x, x[::-1].copy()], y


class TwoLosses(keras.Model):
    """A custom train step whose loss reads output "a" alone: head "b" never trains."""

    def step_loss(self, y: Any, pred: Any) -> Any:
        return ops.mean(ops.square(y[0] - pred[0]))

    def train_step(self, *args: Any) -> Any:
        if keras.backend.backend() == "jax":
            return self._jax_step(*args)
        return self._tf_step(*args)

    def _tf_step(self, data: Any) -> Any:
        import tensorflow as tf

        x, y = data
        with tf.GradientTape() as tape:
            pred = self(x, training=True)
            loss = self.step_loss(y, pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {"loss": loss}

    def _jax_step(self, state: Any, data: Any) -> Any:
        import jax

        trainable, non_trainable, optimizer_vars, metrics_vars = state
        x, y = data

        def compute(trainable: Any, non_trainable: Any) -> Any:
            pred, non_trainable = self.stateless_call(trainable, non_trainable, x, training=True)
            return self.step_loss(y, pred), non_trainable

        (loss, non_trainable), grads = jax.value_and_grad(compute, has_aux=True)(
            trainable, non_trainable
        )
        trainable, optimizer_vars = self.optimizer.stateless_apply(optimizer_vars, grads,
                                                                   trainable)  # fmt: skip
        return {"loss": loss}, (trainable, non_trainable, optimizer_vars, metrics_vars)


def custom_train_step() -> tuple[Any, Any, Any]:
    inp = keras.Input((4,))
    h = layers.Dense(8, activation="tanh", name="body")(inp)
    model = TwoLosses(inp, [layers.Dense(1, name="a")(h), layers.Dense(1, name="b")(h)],
                      name="own_step")  # fmt: skip
    model.compile(optimizer="sgd")
    return (model, *data(2))


def embedding() -> tuple[Any, Any, Any]:
    ids = keras.Input((3,), dtype="int32")
    e = layers.Embedding(10, 4, name="embed")(ids)
    out = layers.Dense(1, name="out")(ops.mean(e, axis=1))
    model = keras.Model(ids, out, name="embedding")
    model.compile(optimizer="sgd", loss="mse")
    x = np.arange(BATCH * 3).reshape(BATCH, 3) % 10
    return model, x.astype("int32"), data()[1]


#: Every program of the matrix, by name.
PROGRAMS: dict[str, Callable[[], tuple[Any, Any, Any]]] = {
    f.__name__: f
    for f in (healthy, unused_head, stop_gradient, argmax, rounded, integer_cast, comparison,
              frozen_layer, trainable_after_compile, lambda_layer, custom_gradient,
              mixed_precision, subclassed, shared_layer, custom_train_step, embedding)
}  # fmt: skip


def run_all(watch: Callable[[], Any]) -> dict[str, Any]:
    """Each program built and trained one step inside its own ``watch()`` block; its report's
    JSON by name."""
    out = {}
    for name, program in PROGRAMS.items():
        keras.backend.clear_session()
        seed(0)
        with watch() as w:
            model, x, y = program()
            train(model, x, y)
        out[name] = w.report.to_dict()
    return out
