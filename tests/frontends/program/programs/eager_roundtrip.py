"""Eager mistakes: a value through numpy, a cast to an integer, a read before the tape."""

import numpy as np
import tensorflow as tf

w = tf.Variable([[0.5], [-1.0]], name="w")
v = tf.Variable([[2.0], [1.0]], name="v")
u = tf.Variable([[1.0], [3.0]], name="u")
x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
early = x @ u  # read before the tape started
with tf.GradientTape() as tape:
    h = (x @ w).numpy()  # leaves TensorFlow
    back = tf.constant(np.tanh(h))
    counts = tf.cast(x @ v, tf.int32)  # an integer cast
    loss = tf.reduce_sum(back) + tf.reduce_sum(tf.cast(counts, tf.float32)) + tf.reduce_sum(early)
grads = tape.gradient(loss, [w, v, u])
print([g is None for g in grads])
