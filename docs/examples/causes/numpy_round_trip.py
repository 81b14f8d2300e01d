"""A NumPy round trip inside the tape: the value leaves TensorFlow and comes back a constant."""

import numpy as np
import tensorflow as tf

w = tf.Variable([0.2, 0.7], name="w")
with tf.GradientTape() as tape:
    h = w * 3.0
    v = np.clip(h.numpy(), 0.0, 1.0)  # the bug: np.clip on the value, outside TensorFlow
    loss = tf.reduce_sum(tf.constant(v) * 2.0)
grads = tape.gradient(loss, [w])
