"""A persistent tape asked for two losses; u is not used by the first one, and nothing of
the program leaves TensorFlow on a path to it (its value is printed only after both losses
were made)."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
u = tf.Variable([1.0, 1.0], name="u")
with tf.GradientTape(persistent=True) as tape:
    loss = tf.reduce_sum(w * 2.0)
    loss_u = tf.reduce_sum(u * 3.0)
print("loss_u", float(loss_u))
only_u = tape.gradient(loss_u, u)
both = tape.gradient(loss, [w, u])
print([g is None for g in both])
