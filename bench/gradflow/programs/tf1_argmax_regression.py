# gradflow: buggy
# title: a loss on the argmax of the logits, cast back to float, in a TensorFlow 1 graph
# source: https://github.com/tensorflow/tensorflow/issues/15278,
#   https://github.com/tensorflow/tensorflow/issues/2177
# shrunk: the reports' argmax-then-cast snippets inside a small classifier trained with minimize, 32
#   samples, one step
# kind: tf1
# effect: none
# cause: nondifferentiable
# line: 26
# fix: soft-argmax, differentiable-op, no-gradient-op
# twin: tf1_argmax_regression_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 6])
labels = v1.placeholder(tf.int32, [None])
w = v1.get_variable("w", [6, 4])
logits = tf.matmul(x, w)
predicted = tf.cast(tf.argmax(logits, axis=1), tf.float32)
loss = tf.reduce_mean(tf.square(predicted - tf.cast(labels, tf.float32)))
_truth.graph(loss)
train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
feed = {x: rng.normal(size=(32, 6)), labels: rng.integers(0, 4, size=32)}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train, feed)
