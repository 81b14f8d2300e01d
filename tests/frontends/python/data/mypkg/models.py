"""Sample Keras targets, imported as ``mypkg.models:FUNCTION`` from ``tests/frontends/python/data``.

Every initializer is seeded, so each call of a function builds the same weights: the tests
rebuild a target in-process and differentiate it with bare TensorFlow to check gradscope.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

import gradscope


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype("float32")
    price = rng.normal(size=(8, 1)).astype("float32")
    kind = rng.integers(0, 3, size=(8,)).astype("int32")
    return x, price, kind


def _dense(units: int, name: str, seed: int, **kwargs: Any) -> keras.layers.Dense:
    init = keras.initializers.GlorotUniform(seed=seed)
    return keras.layers.Dense(units, name=name, kernel_initializer=init, **kwargs)


def two_heads_model() -> keras.Model:
    """A functional model: a shared body and two heads."""
    inputs = keras.Input((4,), name="x")
    body = _dense(16, "body", 1, activation="tanh")(inputs)
    price = _dense(1, "price", 2)(body)
    kind = _dense(3, "kind", 3)(body)
    return keras.Model(inputs, [price, kind], name="two_heads")


def two_heads() -> dict[str, Any]:
    """Each head's loss reaches the body and its own head, never the other head."""
    model = two_heads_model()
    x, price, kind = data()

    def price_loss() -> tf.Tensor:
        predicted, _ = model(x)
        return tf.reduce_mean(tf.square(predicted - price))

    def kind_loss() -> tf.Tensor:
        _, logits = model(x)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=kind, logits=logits)
        )

    def agreement_loss() -> tf.Tensor:
        predicted, logits = model(x)
        chosen = tf.argmax(logits, axis=-1)  # an index: no gradient reaches the kind head
        return tf.reduce_mean(predicted[:, 0] * tf.cast(chosen, tf.float32))

    return {
        "losses": {"price": price_loss, "kind": kind_loss, "agreement": agreement_loss},
        "model": model,
        "expect": {
            "price": {"none": ["kind/*"], "connected": ["body/*", "price/*"]},
            "kind": {"none": ["price/*"], "connected": ["body/*", "kind/*"]},
        },
    }


def compiled() -> gradscope.Target:
    """The same model compiled with a loss per output; gradscope.keras.targets does the rest."""
    model = two_heads_model()
    model.compile(
        optimizer="sgd",
        loss={"price": "mse", "kind": "sparse_categorical_crossentropy"},
        loss_weights={"price": 2.0, "kind": 0.5},
    )
    x, price, kind = data()
    return gradscope.keras.targets(
        model, x, {"price": price, "kind": kind}, expect={"price": {"none": ["kind/*"]}}
    )


class Snapshot(keras.layers.Layer):
    """Stores the batch mean of its input in a weight and returns that weight's value."""

    def build(self, shape: Any) -> None:
        self.buffer = self.add_weight(
            shape=(shape[-1],), initializer="zeros", trainable=False, name="buffer"
        )

    def call(self, x: tf.Tensor) -> tf.Tensor:
        self.buffer.assign(tf.reduce_mean(x, axis=0))  # the value is copied: no gradient
        return tf.ones_like(x) * self.buffer


def assign_layer() -> gradscope.Target:
    """The encoder reaches the loss only through Snapshot's assign."""
    model = keras.Sequential(
        [
            keras.Input((4,)),
            _dense(6, "encoder", 4),
            Snapshot(name="snapshot"),
            _dense(1, "decoder", 5),
        ],
        name="snapshotter",
    )
    x, price, _ = data()
    return gradscope.Target(
        losses={"mse": lambda: tf.reduce_mean(tf.square(model(x) - price))}, model=model
    )
