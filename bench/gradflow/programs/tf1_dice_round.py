# gradflow: buggy
# title: a dice loss on rounded, clipped predictions
# source: https://github.com/keras-team/keras/issues/2994,
#   https://github.com/j-c-carr/lightcones/issues/21
# shrunk: the report's dice_loss2 (K.round(K.clip(y_pred, 0.7, 1.0))) in a TensorFlow 1 graph on a
#   one-layer segmenter, 16 samples, one step
# kind: tf1
# effect: none
# cause: nondifferentiable
# line: 27
# fix: differentiable-op, no-gradient-op, straight-through
# twin: tf1_dice_round_fixed.py
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
yp = tf.round(tf.clip_by_value(tf.reshape(y_pred, [-1]), 0.7, 1.0))
loss = 1.0 - 2.0 * tf.reduce_sum(yt * yp) / (tf.reduce_sum(yt) + tf.reduce_sum(yp) + 1e-6)
_truth.graph(loss)
train = v1.train.AdamOptimizer(0.01).minimize(loss)
feed = {x: rng.normal(size=(16, 10)), y_true: rng.integers(0, 2, size=(16, 10))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    sess.run(train, feed)
