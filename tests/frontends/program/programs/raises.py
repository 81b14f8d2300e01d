"""A program that takes one gradient, then fails."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * w)
print("grad", tape.gradient(loss, w).numpy())


def broken():
    raise ValueError("the data loader is empty")


broken()
