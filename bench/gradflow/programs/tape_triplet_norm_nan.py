# gradflow: buggy
# title: a triplet loss with tf.norm: an anchor equal to its positive makes the gradient NaN
# source: https://github.com/tensorflow/tensorflow/issues/12071
# shrunk: the report's tf.norm at a zero row to a triplet loss whose positives are the anchors
#   themselves (no augmentation yet), a margin of 10 so every triplet is active, 16 samples,
#   one step
# kind: tape
# effect: nan
# cause: nan
# line: 25
# fix: double-where
# twin: tape_triplet_norm_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

anchors = rng.normal(size=(16, 8)).astype("float32")
negatives = rng.normal(size=(16, 8)).astype("float32")
embed = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4, activation="tanh")])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    a, p, n = embed(anchors), embed(anchors), embed(negatives)
    d_pos = tf.norm(a - p, axis=1)
    d_neg = tf.norm(a - n, axis=1)
    loss = tf.reduce_mean(tf.nn.relu(d_pos - d_neg + 10.0))
grads = tape.gradient(loss, embed.trainable_variables)
_truth.record(grads, embed.trainable_variables)
optimizer.apply_gradients(zip(grads, embed.trainable_variables))
