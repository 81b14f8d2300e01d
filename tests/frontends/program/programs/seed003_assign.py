"""Seed 003: an eager assign copies patch's value into x, and the tape loses patch."""

import tensorflow as tf

x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]])
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]])
with tf.GradientTape() as g:
    g.watch(patch)
    x[:2, :2].assign(patch)
    y = tf.tensordot(x, tf.transpose(x), axes=1)
    o = tf.reduce_mean(y)
do_dpatch = g.gradient(o, patch)
print("do_dpatch", do_dpatch)

# the fix from the answer: pad the patch and add it
x2 = tf.Variable([[0.0, 0.0, 4.0], [0.0, 0.0, 100.0]])
with tf.GradientTape() as g2:
    g2.watch(patch)
    padded = tf.pad(patch, tf.constant([[0, 0], [0, 1]]), mode="CONSTANT", constant_values=0)
    revised_x = x2 + padded
    y2 = tf.tensordot(revised_x, tf.transpose(revised_x), axes=1)
    o2 = tf.reduce_mean(y2)
print("fixed", g2.gradient(o2, patch))
