# gradflow: fixed
# twin of: tf1_py_func_loss.py
# change: the dice loss written with TensorFlow ops
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)


def np_dice_loss(pred, target):
    intersection = np.sum(pred * target)
    return np.float32(1.0 - 2.0 * intersection / (np.sum(pred) + np.sum(target) + 1e-6))


x = v1.placeholder(tf.float32, [None, 10])
target = v1.placeholder(tf.float32, [None, 10])
w = v1.get_variable("w", [10, 10])
pred = tf.sigmoid(tf.matmul(x, w))
intersection = tf.reduce_sum(pred * target)
loss = 1.0 - 2.0 * intersection / (tf.reduce_sum(pred) + tf.reduce_sum(target) + 1e-6)
_truth.graph(loss)
train = v1.train.AdamOptimizer(0.01).minimize(loss)
feed = {x: rng.normal(size=(16, 10)), target: rng.integers(0, 2, size=(16, 10))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train, feed)
