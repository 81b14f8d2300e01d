"""A custom gradient that returns None, in a tf.function and eagerly."""

import tensorflow as tf
from custom_block import block

v = tf.Variable([3.0, 4.0], name="v")


@tf.function
def traced():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(block(v))
    return tape.gradient(loss, v)


print(traced())
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(block(v))
print(tape.gradient(loss, v))
