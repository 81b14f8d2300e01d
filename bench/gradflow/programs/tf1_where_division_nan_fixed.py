# gradflow: fixed
# twin of: tf1_where_division_nan.py
# change: the division made safe before tf.where: W1 / tf.where(W2 > 0, W2, 1)
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

W1 = tf.Variable([2.0], name="W1")
W2 = tf.Variable([0.0], name="W2")
ratio = tf.where(W2 > 0, W1 / tf.where(W2 > 0, W2, tf.ones_like(W2)), tf.zeros_like(W1))
loss = tf.reduce_sum(tf.square(ratio - 1.0) + 0.1 * tf.square(W1) + 0.1 * tf.square(W2 - 1.0))
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess)
    sess.run(train)
    print(sess.run([W1, W2]))
