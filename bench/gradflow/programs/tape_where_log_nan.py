# gradflow: buggy
# title: tf.where guards log(x) in the forward pass, but the untaken branch's NaN reaches alpha
# source: https://github.com/tensorflow/tensorflow/issues/27684,
#   https://github.com/tensorflow/tensorflow/issues/38349
# shrunk: the report's snippet unchanged but for a seeded generator
# kind: tape
# effect: nan
# cause: nan
# line: 22
# fix: double-where, safe-log
# twin: tape_where_log_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = tf.convert_to_tensor(rng.normal(size=100).astype("float32"))
alpha = tf.Variable(1.0, name="alpha")
with tf.GradientTape() as t:
    s = tf.where(x >= 0, alpha * tf.math.log(x), tf.zeros_like(x))
gradients = t.gradient(s, [alpha])
_truth.record(gradients, [alpha])
print(gradients)
