# gradflow: buggy
# title: tf.where guards a division by zero, but the untaken branch makes the gradients NaN
# source: https://github.com/tensorflow/tensorflow/issues/20091
# shrunk: the report's two variables and guarded division, trained one step with compute_gradients
#   and apply_gradients
# kind: tf1
# effect: nan
# cause: nan
# line: 23
# fix: double-where, divide-no-nan
# twin: tf1_where_division_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

W1 = tf.Variable([2.0], name="W1")
W2 = tf.Variable([0.0], name="W2")
ratio = tf.where(W2 > 0, W1 / W2, tf.zeros_like(W1))
loss = tf.reduce_sum(tf.square(ratio - 1.0) + 0.1 * tf.square(W1) + 0.1 * tf.square(W2 - 1.0))
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess)
    sess.run(train)
    print(sess.run([W1, W2]))
