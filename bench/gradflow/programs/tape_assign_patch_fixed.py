# gradflow: fixed
# twin of: tape_assign_patch.py
# change: the patch padded and added to x as a tensor (the accepted answer)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = tf.Variable([[0.0, 0.0, 4.0], [0.0, 0.0, 100.0]])
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]])
with tf.GradientTape() as g:
    g.watch(patch)
    padded = tf.pad(patch, tf.constant([[0, 0], [0, 1]]), mode="CONSTANT", constant_values=0)
    revised_x = x + padded
    y = tf.tensordot(revised_x, tf.transpose(revised_x), axes=1)
    o = tf.reduce_mean(y)
do_dpatch = g.gradient(o, patch)
_truth.record([do_dpatch], [patch])
print(do_dpatch)
