"""unconnected_gradients given as TensorFlow's string "zero": the program gets zeros."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
u = tf.Variable([3.0], name="u")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * 2.0)
g = tape.gradient(loss, [w, u], unconnected_gradients="zero")
print("eager", [None if x is None else x.numpy().tolist() for x in g])


@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * 2.0)
    return tape.gradient(loss, [w, u], unconnected_gradients="zero")


print("function", [None if x is None else x.numpy().tolist() for x in step()])
