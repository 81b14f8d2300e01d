# gradflow: buggy
# title: softmax_cross_entropy_with_logits called with labels and logits swapped
# source: https://github.com/tensorflow/tensorflow/issues/1511
# shrunk: the MNIST deep CNN of the report to one hidden layer on 32 synthetic 16-feature samples;
#   the loss line kept as posted
# kind: tf1
# effect: none
# cause: stop-gradient
# line: 30
# fix: -
# twin: tf1_labels_logits_swapped_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 16])
y_ = v1.placeholder(tf.float32, [None, 10])
w1 = v1.get_variable("w1", [16, 32])
b1 = v1.get_variable("b1", [32], initializer=v1.zeros_initializer())
w2 = v1.get_variable("w2", [32, 10])
b2 = v1.get_variable("b2", [10], initializer=v1.zeros_initializer())
h = tf.nn.relu(tf.matmul(x, w1) + b1)
y_conv = tf.matmul(h, w2) + b2
with tf.name_scope("loss"):
    val = v1.nn.softmax_cross_entropy_with_logits(logits=y_, labels=y_conv)
    cross_entropy = tf.reduce_mean(val)
_truth.graph(cross_entropy)
with tf.name_scope("adam_optimizer"):
    train_step = v1.train.AdamOptimizer(1e-4).minimize(cross_entropy)
feed = {x: rng.normal(size=(32, 16)), y_: np.eye(10)[rng.integers(0, 10, size=32)]}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train_step, feed)
