"""An eager tape over many ops (more than gradscope keeps outside a tape's span)."""

import sys

import tensorflow as tf

ops = int(sys.argv[1])
w = tf.Variable(1.0, name="w")
v = tf.Variable(2.0, name="v")
x = tf.constant(0.5)
with tf.GradientTape() as tape:
    h = tf.stop_gradient(w * 2.0)
    y = v * 1.0
    for _ in range(ops):
        y = y + x
    loss = h * y
print([g is None for g in tape.gradient(loss, [w, v])])
