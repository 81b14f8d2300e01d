"""Gradients cut inside function bodies, control flow and custom gradients (issue 15, 1-4).

Each function is a Python target; the tests compare gradscope with bare TensorFlow running
the same losses eagerly under a GradientTape and traced with tf.gradients.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf


def _variables() -> tuple[tf.Variable, tf.Variable]:
    return tf.Variable(2.0, name="w"), tf.Variable([1.0, -3.0, 0.5], name="v")


def nested_function() -> dict[str, Any]:
    """A stop_gradient and an argmax inside nested tf.functions called from the loss."""
    w, v = _variables()

    @tf.function
    def frozen_scale(x: tf.Tensor) -> tf.Tensor:
        return tf.stop_gradient(x) * 2.0  # nested: stop

    @tf.function
    def pick(x: tf.Tensor) -> tf.Tensor:
        return tf.cast(tf.argmax(x), tf.float32)  # nested: argmax

    @tf.function
    def outer(x: tf.Tensor) -> tf.Tensor:
        return frozen_scale(x) + 1.0  # nested twice

    return {
        "losses": {
            "stopped": lambda: frozen_scale(w) + tf.reduce_sum(v),
            "argmax": lambda: pick(v) * w,
            "twice": lambda: outer(w) * tf.reduce_sum(v),
        },
        "variables": [w, v],
    }


def while_loop() -> dict[str, Any]:
    """A stop_gradient inside a tf.while_loop body, on every path and on some."""
    w, v = _variables()

    def all_stopped() -> tf.Tensor:
        def body(i: tf.Tensor, acc: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return i + 1, acc + tf.stop_gradient(w * 1.5)  # loop: stop all

        _, acc = tf.while_loop(lambda i, a: i < 3, body, [tf.constant(0), tf.constant(0.0)])
        return acc + tf.reduce_sum(v)

    def partly() -> tf.Tensor:
        def body(i: tf.Tensor, acc: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            return i + 1, acc * 0.5 + tf.stop_gradient(w) * w  # loop: stop part

        _, acc = tf.while_loop(lambda i, a: i < 4, body, [tf.constant(0), tf.constant(1.0)])
        return acc

    def autograph_for() -> tf.Tensor:
        total = tf.constant(0.0)
        for i in tf.range(3):  # autograph turns this into a while_loop
            total += tf.stop_gradient(v[i]) * w  # for: stop v
        return total

    return {
        "losses": {"all_stopped": all_stopped, "partly": partly, "autograph_for": autograph_for},
        "variables": [w, v],
    }


def conditionals() -> dict[str, Any]:
    """tf.cond and tf.switch_case branches with a stop_gradient; the predicate is no cut."""
    w, v = _variables()

    def cond_stopped() -> tf.Tensor:
        negative = tf.reduce_sum(v) < 0.0
        return tf.cond(negative, lambda: tf.stop_gradient(w) * 3.0, lambda: w)  # cond: stop taken

    def case_stopped() -> tf.Tensor:
        index = tf.cast(tf.argmax(v), tf.int32)
        return tf.switch_case(
            index,
            [lambda: w * 1.0, lambda: tf.stop_gradient(w) * 5.0, lambda: w * 0.5],  # case
        )

    def python_if() -> tf.Tensor:
        if tf.reduce_sum(v) > 0.0:  # autograph: a tf.cond on a tensor
            return w * 2.0
        return tf.stop_gradient(w) + tf.reduce_sum(v)  # if: stop

    return {
        "losses": {"cond": cond_stopped, "case": case_stopped, "python_if": python_if},
        "variables": [w, v],
    }


@tf.custom_gradient
def clip_first(x: tf.Tensor, y: tf.Tensor) -> Any:
    """x * y whose gradient passes to x only (y gets None from grad)."""

    def grad(upstream: tf.Tensor) -> Any:
        return upstream * y, None

    return x * y, grad


@tf.custom_gradient
def log1pexp(x: tf.Tensor) -> Any:
    """The TensorFlow guide's numerically stable log(1 + exp(x))."""
    e = tf.exp(x)

    def grad(upstream: tf.Tensor) -> tf.Tensor:
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


def custom_gradients() -> dict[str, Any]:
    """A custom gradient whose grad_fn returns None for one input; a well-behaved one."""
    w, v = _variables()
    return {
        "losses": {
            "clip": lambda: clip_first(w, tf.reduce_sum(v)),
            "log1pexp": lambda: tf.reduce_sum(log1pexp(v * w)),
        },
        "variables": [w, v],
    }


def integer_chains() -> dict[str, Any]:
    """argmax -> cast -> loss and round -> cast -> cast: the gradient is lost at the first."""
    w, v = _variables()
    logits = tf.constant(np.arange(12, dtype="float32").reshape(4, 3))

    def argmax_cast() -> tf.Tensor:
        predicted = tf.argmax(logits * v, axis=-1)  # chain: argmax
        return tf.reduce_mean(tf.cast(predicted, tf.float32)) * 1.0

    def round_casts() -> tf.Tensor:
        rounded = tf.round(v * w)  # chain: round
        return tf.reduce_sum(tf.cast(tf.cast(rounded, tf.int32), tf.float32))

    def accuracy() -> tf.Tensor:
        hits = tf.equal(tf.argmax(logits * v, axis=-1), 2)  # chain: accuracy
        return tf.reduce_mean(tf.cast(hits, tf.float32)) + 0.0 * w

    return {
        "losses": {"argmax_cast": argmax_cast, "round_casts": round_casts, "accuracy": accuracy},
        "variables": [w, v],
    }
