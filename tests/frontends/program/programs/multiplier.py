"""output_gradients that flip or zero every gradient of a call, eagerly and in a function."""

import tensorflow as tf

w = [tf.Variable([0.0, 0.1], name="w0"), tf.Variable([0.0, 0.2], name="w1")]
x = 2.0
with tf.GradientTape(persistent=True) as tape:
    y = tf.reduce_mean(x * (w[0] + w[1]))
    y2 = 7.0 * y
flipped = tape.gradient(y2, w, output_gradients=-1.0)  # flipped
zeroed = tape.gradient(y2, w, output_gradients=tf.constant(0.0))  # zeroed
plain = tape.gradient(y2, w)  # plain


@tf.function
def step():
    with tf.GradientTape() as t:
        loss = 7.0 * tf.reduce_mean(x * (w[0] + w[1]))
    return t.gradient(loss, w, output_gradients=tf.constant(-1.0))  # in a function


traced = step()
