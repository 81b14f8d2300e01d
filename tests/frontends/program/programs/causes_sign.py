"""Binarized weights through tf.sign (its gradient is zeros_like, not None): an eager tape,
a tf.function, and the straight-through estimator that fixes it. Prints bare TensorFlow's
gradients: whether each is None, and whether it is all zero."""

import numpy as np
import tensorflow as tf

w = tf.Variable([[0.5], [-0.3], [0.2]], name="w")
shift = tf.Variable([0.1], name="shift")
x = tf.constant(np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3))


def report(grads):
    print([(g is None, g is not None and not np.any(g.numpy())) for g in grads])


with tf.GradientTape() as tape:
    binary = tf.sign(w + shift)
    loss = tf.reduce_mean(tf.square(tf.matmul(x, binary) - 1.0))
report(tape.gradient(loss, [w, shift]))


@tf.function
def traced():
    with tf.GradientTape() as t:
        b = tf.sign(w)
        traced_loss = tf.reduce_sum(tf.matmul(x, b))
    return t.gradient(traced_loss, [w])


report(traced())

with tf.GradientTape() as tape:
    ste = w + tf.stop_gradient(tf.sign(w) - w)
    ste_loss = tf.reduce_mean(tf.square(tf.matmul(x, ste) - 1.0))
report(tape.gradient(ste_loss, [w]))
