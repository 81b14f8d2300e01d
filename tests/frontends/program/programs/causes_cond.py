"""A variable read only by the branch of tf.cond not taken: zeros in a tf.function, None in
eager code (which runs the taken branch only)."""

import tensorflow as tf

w = tf.Variable(1.0, name="w")
u = tf.Variable(2.0, name="u")
x = tf.constant(3.0)


def step():
    with tf.GradientTape() as tape:
        y = tf.cond(x > 0.0, lambda: w * x, lambda: u * x)
        loss = y * y
    return tape.gradient(loss, [w, u])


print([None if g is None else float(g) for g in step()])
print([None if g is None else float(g) for g in tf.function(step)()])
