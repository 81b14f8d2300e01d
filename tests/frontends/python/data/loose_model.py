"""Sample targets in a loose file, run as ``tests/frontends/python/data/loose_model.py:FN``."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

import gradscope

X = np.random.default_rng(1).normal(size=(6, 3)).astype("float32")
Y = np.random.default_rng(2).normal(size=(6, 1)).astype("float32")


class FrozenInput(keras.layers.Layer):
    """A learned per-feature scale applied to an input whose own gradient is stopped."""

    def build(self, shape: Any) -> None:
        self.scale = self.add_weight(shape=(shape[-1],), initializer="ones", name="scale")

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return tf.stop_gradient(x) * self.scale


class Net(keras.Model):
    """encoder -> FrozenInput -> head: the encoder never trains."""

    def __init__(self) -> None:
        super().__init__(name="net")
        init = keras.initializers.GlorotUniform
        self.encoder = keras.layers.Dense(5, name="encoder", kernel_initializer=init(seed=7))
        self.frozen = FrozenInput(name="frozen_input")
        self.head = keras.layers.Dense(1, name="head", kernel_initializer=init(seed=8))

    def call(self, x: tf.Tensor) -> tf.Tensor:
        return self.head(self.frozen(self.encoder(x)))


def build() -> gradscope.Target:
    net = Net()
    return gradscope.Target(
        losses={"mse": lambda: tf.reduce_mean(tf.square(net(X) - Y))},
        expect={"mse": {"connected": ["*"]}},
    )


def plain_net() -> keras.Model:
    init = keras.initializers.GlorotUniform
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, name="hidden", kernel_initializer=init(seed=9)),
            keras.layers.Dense(1, name="out", kernel_initializer=init(seed=10)),
        ],
        name="plain",
    )


def through_numpy() -> dict[str, Any]:
    """One loss computed from NumPy values, one that only takes a constant from NumPy."""
    model = plain_net()

    def numpy_error() -> tf.Tensor:
        error = model(X).numpy() - Y  # .numpy(): the path to every variable is cut here
        return tf.reduce_mean(tf.constant(error) ** 2)

    def numpy_scale() -> tf.Tensor:
        predicted = model(X)
        scale = float(np.std(predicted.numpy()))  # a constant: the gradient still flows
        return tf.reduce_mean(predicted) / scale

    return {"losses": {"numpy_error": numpy_error, "numpy_scale": numpy_scale}, "model": model}


def python_float() -> dict[str, Any]:
    """float() on a tensor: autograph keeps it a tensor when traced; eagerly it is a number."""
    w = tf.Variable(3.0, name="w")

    def loss() -> tf.Tensor:
        return float(w * 2.0) * tf.ones(())

    return {"losses": {"loss": loss}, "variables": [w]}


def fresh_variable() -> dict[str, Any]:
    """A loss that creates its weight on every call."""
    x = tf.ones((2, 2))

    def loss() -> tf.Tensor:
        w = tf.Variable(tf.ones((2, 2)), name="fresh")  # a new variable on every call
        return tf.reduce_sum(tf.matmul(x, w))

    return {"losses": {"loss": loss}}


def fresh_traced_variable() -> dict[str, Any]:
    """The same with a constant initial value, which a trace can lift out of the function."""
    x = tf.ones((2, 2))

    def loss() -> tf.Tensor:
        w = tf.Variable(np.ones((2, 2), "float32"), name="fresh")  # a new variable on every call
        return tf.reduce_sum(tf.matmul(x, w))

    return {"losses": {"loss": loss}}
