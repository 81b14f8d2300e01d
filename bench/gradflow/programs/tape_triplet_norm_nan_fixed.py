# gradflow: fixed
# twin of: tape_triplet_norm_nan.py
# change: the distance as sqrt(max(sum of squares, 1e-12)): never the square root of 0
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
    d_pos = tf.sqrt(tf.maximum(tf.reduce_sum(tf.square(a - p), axis=1), 1e-12))
    d_neg = tf.norm(a - n, axis=1)
    loss = tf.reduce_mean(tf.nn.relu(d_pos - d_neg + 10.0))
grads = tape.gradient(loss, embed.trainable_variables)
_truth.record(grads, embed.trainable_variables)
optimizer.apply_gradients(zip(grads, embed.trainable_variables))
