"""Python targets for what only Python code gets wrong (issue 15, classes 5-9)."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

import gradscope

X = np.linspace(-1.0, 1.0, 24, dtype="float32").reshape(6, 4)
Y = np.array([[0.5], [-1.0], [2.0], [0.0], [1.0], [-0.5]], dtype="float32")


def batchnorm_model() -> keras.Model:
    keras.utils.set_random_seed(3)
    inputs = keras.Input((4,))
    h = keras.layers.Dense(5, kernel_regularizer=keras.regularizers.L2(0.1), name="hidden")(inputs)
    h = keras.layers.BatchNormalization(name="norm")(h)
    out = keras.layers.Dense(1, name="out")(keras.layers.Activation("tanh")(h))
    model = keras.Model(inputs, out, name="regressor")
    model.compile(optimizer="sgd", loss="mse")
    return model


def compiled() -> gradscope.Target:
    """A compiled model with BatchNormalization and a weight regularizer."""
    return gradscope.keras.targets(batchnorm_model(), X, Y)


def variable_loss() -> dict[str, Any]:
    """A loss that returns a tf.Variable itself."""
    w = tf.Variable(1.5, name="w")
    return {"losses": {"direct": lambda: w}, "variables": [w]}


def chatty() -> dict[str, Any]:
    """A loss that prints (to stdout, as users' code does)."""
    w = tf.Variable(2.0, name="w")

    def loss() -> tf.Tensor:
        print("computing the loss")
        return w * 3.0

    return {"losses": {"chatty": loss}, "variables": [w]}


def no_gradient_op() -> dict[str, Any]:
    """An op TensorFlow registers no gradient for."""
    image = tf.Variable(np.linspace(0, 1, 48, dtype="float32").reshape(1, 4, 4, 3), name="image")

    def contrast() -> tf.Tensor:
        return tf.reduce_sum(tf.image.adjust_contrast(image, 2.0))  # no gradient here

    return {"losses": {"contrast": contrast}, "variables": [image]}


def two_networks() -> dict[str, Any]:
    """A GAN-like pair of functional models whose layers share names."""
    keras.utils.set_random_seed(1)

    def net(name: str) -> keras.Model:
        inputs = keras.Input((4,))
        out = keras.layers.Dense(1, name="dense")(keras.layers.Dense(3, name="hidden")(inputs))
        return keras.Model(inputs, out, name=name)

    generator, critic = net("generator"), net("critic")

    def critic_loss() -> tf.Tensor:
        return tf.reduce_mean(critic(X)) - tf.reduce_mean(critic(generator(X)[:, :1] * X))

    return {"losses": {"critic": critic_loss}}


def untracked() -> dict[str, Any]:
    """A raw tf.Variable beside a Keras model: Keras 3 does not track it."""
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="seq")
    scale = tf.Variable(2.0, name="scale")
    return {"losses": {"mse": lambda: tf.reduce_mean((model(X) * scale - Y) ** 2)}, "model": model}


def printed_numpy() -> dict[str, Any]:
    """A loss that prints a value with .numpy() but keeps computing with tensors."""
    w = tf.Variable(2.0, name="w")

    def loss() -> tf.Tensor:
        value = w * 3.0
        print("loss is", value.numpy())
        return value

    return {"losses": {"printed": loss}, "variables": [w]}


def py_function_loss() -> dict[str, Any]:
    """A scalar loss made partly by tf.py_function (of unknown static shape)."""
    w = tf.Variable(2.0, name="w")

    def loss() -> tf.Tensor:
        offset = tf.py_function(lambda: tf.constant(1.0), [], tf.float32)
        return w * 3.0 + offset

    return {"losses": {"py": loss}, "variables": [w]}


def fields() -> dict[str, Any]:
    """grad_loss, stop_gradients and unconnected_gradients on a Python target."""
    w = tf.Variable([1.0, 2.0], name="w")
    u = tf.Variable(3.0, name="u")
    spare = tf.Variable(4.0, name="spare")

    def loss() -> tf.Tensor:
        h = tf.multiply(w, u, name="scaled")
        return tf.reduce_sum(h * w)

    return {
        "losses": {"flipped": loss, "stopped": loss, "zeros": loss},
        "variables": [w, u, spare],
        "grad_loss": {"flipped": -2.0},
        "stop_gradients": {"stopped": ["scaled"]},
        "unconnected_gradients": "zero",
    }
