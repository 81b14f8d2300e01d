# gradflow: fixed
# twin of: tf1_sign_binarize.py
# change: gradient_override_map({'Sign': 'Identity'}) around tf.sign, the fix in the thread
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
with graph.gradient_override_map({"Sign": "Identity"}):
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
