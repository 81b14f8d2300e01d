# gradflow: buggy
# title: a GAN's generator loss goes through numpy (.numpy() on the fake batch)
# source: https://github.com/tensorflow/tensorflow/issues/31919
# shrunk: the Colab GAN (moments of the generated data as the discriminator's features, computed in
#   numpy from g_fake_data.numpy().T) to two Dense layers, 16 samples, one step
# kind: tape
# effect: none
# cause: numpy
# line: 32
# fix: keep-tensorflow-ops
# twin: tape_gan_numpy_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

G = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
D = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
noise = rng.normal(size=(16, 4)).astype("float32")
opt = tf.keras.optimizers.SGD(0.01)


def get_moments(d):
    mean = np.mean(d, axis=1, keepdims=True)
    return np.concatenate([mean, np.std(d, axis=1, keepdims=True), d[:, :2]], axis=1)


with tf.GradientTape() as tape:
    fake = G(noise)
    decision = D(get_moments(fake.numpy()))
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(tf.ones_like(decision), decision))
grads = tape.gradient(loss, G.trainable_variables)
_truth.record(grads, G.trainable_variables)
opt.apply_gradients(zip(grads, G.trainable_variables))
