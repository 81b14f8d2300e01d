"""Seed 002: what output_gradients (grad_loss) does to a tape's gradient, eagerly."""

import tensorflow as tf

w = [tf.Variable([0.0, 0.1], name="w0"), tf.Variable([0.0, 0.2], name="w1")]
x = 2.0
with tf.GradientTape(persistent=True) as tape:
    y = tf.reduce_mean(x * (w[0] + w[1]))
    y2 = 7.0 * y
grads = tape.gradient(y2, w)
tf.print(grads)  # [[7 7], [7 7]]
grads = tape.gradient(y, w, output_gradients=tape.gradient(y2, y))  # chain rule by hand
tf.print(grads)  # [[7 7], [7 7]]
grads = tape.gradient(y2, w, output_gradients=-1.0)  # turned around
tf.print(grads)  # [[-7 -7], [-7 -7]]
