# gradflow: buggy
# title: a straight-through estimator written the wrong way round: round() stays on the path
# source: seeds/004_5afcdc22ca5be0f0.txt, https://github.com/microsoft/LQ-Nets/issues/9
# shrunk: the post's y = xx + K.stop_gradient(rounded - xx), written as rounded + stop_gradient(xx -
#   rounded), in its linear regression on 32 synthetic points
# kind: tf1
# effect: none
# cause: nondifferentiable
# line: 27
# fix: straight-through
# twin: tf1_ste_swapped_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x_input = v1.placeholder(tf.float32, [None], name="x_input")
y_input = v1.placeholder(tf.float32, [None], name="y_input")
w = tf.Variable(2.0, name="weight")
b = tf.Variable(1.0, name="biases")
xx = tf.add(tf.multiply(x_input, w), b)
rounded = tf.round(xx)
y = rounded + tf.stop_gradient(xx - rounded)
loss_op = tf.reduce_sum(tf.pow(y_input - y, 2)) / (2 * 32)
_truth.graph(loss_op)
train_op = v1.train.GradientDescentOptimizer(0.01).minimize(loss_op)
x_pure = rng.integers(-10, 100, 32)
feed = {x_input: x_pure + rng.normal(size=32) / 32, y_input: 3 * x_pure + 2}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train_op, feed)
