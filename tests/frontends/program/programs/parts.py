"""Deterministic models and data the test programs share with the tests' references."""

import numpy as np
import tensorflow as tf


def seeded(model, seed):
    """Give every weight of ``model`` values from a numpy generator (no TensorFlow RNG)."""
    rng = np.random.default_rng(seed)
    model.set_weights(
        [rng.normal(size=w.shape).astype("float32") * 0.5 for w in model.get_weights()]
    )
    return model


def gan():
    """A generator, a discriminator, real data and one batch of noise per step."""
    generator = seeded(
        tf.keras.Sequential(
            [
                tf.keras.Input((4,)),
                tf.keras.layers.Dense(8, activation="relu", name="g1"),
                tf.keras.layers.Dense(3, name="g2"),
            ],
            name="generator",
        ),
        1,
    )
    discriminator = seeded(
        tf.keras.Sequential(
            [tf.keras.Input((3,)), tf.keras.layers.Dense(1, name="d1")], name="discriminator"
        ),
        2,
    )
    rng = np.random.default_rng(3)
    real = rng.normal(size=(16, 3)).astype("float32")
    noises = [rng.normal(size=(16, 4)).astype("float32") for _ in range(3)]
    return generator, discriminator, real, noises


def two_heads(model_class=tf.keras.Model):
    """A functional model (of ``model_class``) with outputs "a" and "b", and data for both."""
    inputs = tf.keras.Input((4,))
    body = tf.keras.layers.Dense(8, activation="relu", name="body")(inputs)
    out_a = tf.keras.layers.Dense(1, name="a")(body)
    out_b = tf.keras.layers.Dense(2, name="b")(body)
    model = seeded(model_class(inputs, {"a": out_a, "b": out_b}), 4)
    rng = np.random.default_rng(5)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = {
        "a": rng.normal(size=(32, 1)).astype("float32"),
        "b": rng.normal(size=(32, 2)).astype("float32"),
    }
    return model, x, y


def regression():
    """Data and initial weights of a small linear regression."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(16, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    return x, y, rng.normal(size=(3, 1)).astype("float32"), np.zeros((1,), "float32")


def mlp(dead=False):
    """Data and initial weights of a one-hidden-layer ReLU regression (16 hidden units); with
    ``dead``, 15 of the 16 units start with a bias far below zero: they output 0 for every
    input (dying ReLUs), so the first layer's gradient is almost all zero."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = np.sin(x @ np.array([[1.0], [-0.5], [0.25], [2.0]])).astype("float32")
    b1 = np.full((16,), 0.1, "float32")
    if dead:
        b1[1:] = -20.0
    return (
        x,
        y,
        {
            "w1": (rng.normal(size=(4, 16)) * 0.5).astype("float32"),
            "b1": b1,
            "w2": (rng.normal(size=(16, 1)) * 0.5).astype("float32"),
            "b2": np.zeros((1,), "float32"),
        },
    )
