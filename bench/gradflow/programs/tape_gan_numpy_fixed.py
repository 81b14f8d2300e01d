# gradflow: fixed
# twin of: tape_gan_numpy.py
# change: the moments computed with TensorFlow ops on the tensor itself (no .numpy())
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

G = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
D = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
noise = rng.normal(size=(16, 4)).astype("float32")
opt = tf.keras.optimizers.SGD(0.01)


def get_moments(d):
    mean = tf.reduce_mean(d, axis=1, keepdims=True)
    return tf.concat([mean, tf.math.reduce_std(d, axis=1, keepdims=True), d[:, :2]], axis=1)


with tf.GradientTape() as tape:
    fake = G(noise)
    decision = D(get_moments(fake))
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(tf.ones_like(decision), decision))
grads = tape.gradient(loss, G.trainable_variables)
_truth.record(grads, G.trainable_variables)
opt.apply_gradients(zip(grads, G.trainable_variables))
