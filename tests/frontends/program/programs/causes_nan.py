"""NaN and Inf gradients: log of a non-positive value on the tf.where branch not taken
(eagerly and in a tf.function), and sqrt at 0 (finite forward, infinite gradient)."""

import tensorflow as tf

w = tf.Variable([1.0, -2.0, 0.0], name="w")
v = tf.Variable([0.0, 4.0], name="v")
x = tf.constant([2.0, 1.0, 1.0])


def step():
    with tf.GradientTape() as tape:
        z = w * x
        safe = tf.where(z > 0.0, tf.math.log(z), tf.zeros_like(z))
        loss = tf.reduce_sum(safe) + tf.reduce_sum(tf.sqrt(v))
    return tape.gradient(loss, [w, v])


for grads in (step(), tf.function(step)()):
    print([g.numpy().tolist() for g in grads])
