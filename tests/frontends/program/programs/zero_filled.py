"""``unconnected_gradients=ZERO``: TensorFlow gives zeros for u, which the loss never uses."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
u = tf.Variable([1.0, 2.0], name="u")
ZERO = tf.UnconnectedGradients.ZERO
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * 2.0)
eager = tape.gradient(loss, [w, u], unconnected_gradients=ZERO)


@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * 2.0)
    return tape.gradient(loss, [w, u], unconnected_gradients=ZERO)


@tf.function
def graph_level():
    loss = tf.reduce_sum(w * 2.0)
    return tf.gradients(loss, [w, u], unconnected_gradients=ZERO)


traced, graph = step(), graph_level()
print([g.numpy().tolist() for g in eager + traced + graph])
