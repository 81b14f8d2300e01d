# gradflow: buggy
# title: a patch written into a variable with assign: the loss never sees the patch
# source: seeds/003_6c1be3b4f4b0df01.txt
# shrunk: the question's own code (tf.Variable assign method breaks the tf.GradientTape), unchanged
# kind: tape
# effect: none
# cause: assign
# line: 22
# fix: assign-as-tensor
# twin: tape_assign_patch_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]])
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]])
with tf.GradientTape() as g:
    g.watch(patch)
    x[:2, :2].assign(patch)
    y = tf.tensordot(x, tf.transpose(x), axes=1)
    o = tf.reduce_mean(y)
do_dpatch = g.gradient(o, patch)
_truth.record([do_dpatch], [patch])
print(do_dpatch)
