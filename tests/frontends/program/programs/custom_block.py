"""A ``tf.custom_gradient`` whose gradient function returns None."""

import tensorflow as tf


@tf.custom_gradient
def block(x):
    def grad(dy):
        return None

    return x * 1.0, grad


def build():
    """The same loss as a Python target, for ``inspect``."""
    v = tf.Variable([3.0, 4.0], name="v")
    return {"losses": {"l": lambda: tf.reduce_sum(block(v))}, "variables": [v]}
