"""A Python target whose loss calls a ``tf.function`` that assigns one variable's value into
another, which the loss then reads: ``inspect`` says ``none:assign`` at the ``assign`` inside
the function, as ``run`` does."""

import tensorflow as tf

v = tf.Variable([1.0, 2.0], name="v")
kept = tf.Variable([0.0, 0.0], trainable=False, name="kept")


@tf.function
def keep():
    kept.assign(v * 2.0)  # copy: inside the function


def loss():
    keep()
    return tf.reduce_sum(kept * tf.constant([3.0, 4.0]))


def build():
    return {"losses": {"copied": loss}, "variables": [v]}
