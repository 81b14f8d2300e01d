# gradflow: fixed
# twin of: tf1_dice_round.py
# change: the soft dice on the probabilities themselves (no round, no clip)
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 10])
y_true = v1.placeholder(tf.float32, [None, 10])
w = v1.get_variable("w", [10, 10])
y_pred = tf.sigmoid(tf.matmul(x, w))
yt = tf.reshape(y_true, [-1])
yp = tf.reshape(y_pred, [-1])
loss = 1.0 - 2.0 * tf.reduce_sum(yt * yp) / (tf.reduce_sum(yt) + tf.reduce_sum(yp) + 1e-6)
_truth.graph(loss)
train = v1.train.AdamOptimizer(0.01).minimize(loss)
feed = {x: rng.normal(size=(16, 10)), y_true: rng.integers(0, 2, size=(16, 10))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train, feed)
