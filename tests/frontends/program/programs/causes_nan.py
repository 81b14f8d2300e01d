"""A NaN gradient behind a tf.where: log of a non-positive value on the branch not taken."""

import tensorflow as tf

w = tf.Variable([1.0, -2.0, 0.0], name="w")
x = tf.constant([2.0, 1.0, 1.0])
with tf.GradientTape() as tape:
    z = w * x
    safe = tf.where(z > 0.0, tf.math.log(z), tf.zeros_like(z))
    loss = tf.reduce_sum(safe)
print(tape.gradient(loss, w).numpy())
