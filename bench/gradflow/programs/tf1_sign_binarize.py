# gradflow: buggy
# title: binarized filters through tf.sign: the real-valued filters and shifts never train
# source: https://github.com/layog/Accurate-Binary-Convolution-Network/issues/6
# shrunk: the ABC-Net layer's sign(filters + shift) to a dense layer with binarized weights and a
#   learned shift, 32 samples, one step
# kind: tf1
# effect: zero
# cause: zero
# line: 26
# fix: straight-through, custom-gradient
# twin: tf1_sign_binarize_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

graph = v1.get_default_graph()
x = v1.placeholder(tf.float32, [None, 6])
y = v1.placeholder(tf.float32, [None, 1])
filters = v1.get_variable("filters", [6, 1])
shift = v1.get_variable("shift", [1], initializer=v1.zeros_initializer())
binarized_filters = tf.sign(filters + shift, name="binarized_filters")
loss = tf.reduce_mean(tf.square(tf.matmul(x, binarized_filters) - y))
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
feed = {x: rng.normal(size=(32, 6)), y: rng.normal(size=(32, 1))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
    sess.run(train, feed)
