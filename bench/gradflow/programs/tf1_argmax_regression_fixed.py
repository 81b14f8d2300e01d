# gradflow: fixed
# twin of: tf1_argmax_regression.py
# change: softmax cross-entropy on the logits
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
loss = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
)
_truth.graph(loss)
train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
feed = {x: rng.normal(size=(32, 6)), labels: rng.integers(0, 4, size=32)}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train, feed)
