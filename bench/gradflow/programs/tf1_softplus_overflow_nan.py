# gradflow: buggy
# title: a hand-made softplus that switches to the identity for large inputs: exp overflows
# source: https://github.com/tensorflow/tensorflow/issues/2540
# shrunk: the report's select(x > 0, 0, exp(x)) at x = 1e10 to a softplus guarded the same way
#   inside a one-layer regression whose inputs reach 100, one step
# kind: tf1
# effect: nan
# cause: nan
# line: 25
# fix: double-where
# twin: tf1_softplus_overflow_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 3])
y = v1.placeholder(tf.float32, [None, 1])
w = v1.get_variable("w", [3, 1], initializer=v1.ones_initializer())
z = tf.matmul(x, w)
activation = tf.where(z > 30.0, z, tf.math.log1p(tf.exp(z)))
loss = tf.reduce_mean(tf.square(activation - y))
optimizer = v1.train.GradientDescentOptimizer(1e-4)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
feed = {x: 40.0 * np.abs(rng.normal(size=(8, 3))), y: rng.normal(size=(8, 1))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
    sess.run(train, feed)
