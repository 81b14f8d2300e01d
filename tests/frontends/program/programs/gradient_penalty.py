"""A WGAN-GP critic step (keras-io's wgan_gp, shrunk): the gradient penalty asks a nested
tape for the gradient of the critic's output with respect to a tensor, inside tf.function."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
critic = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1, name="score")])
real = tf.constant(np.random.default_rng(0).normal(size=(8, 4)), tf.float32)
fake = tf.constant(np.random.default_rng(1).normal(size=(8, 4)), tf.float32)


@tf.function
def penalty():
    alpha = tf.random.uniform([8, 1])
    interpolated = real + alpha * (fake - real)
    with tf.GradientTape() as gp_tape:
        gp_tape.watch(interpolated)
        pred = critic(interpolated)
    grads = gp_tape.gradient(pred, [interpolated])[0]
    return tf.reduce_mean((tf.norm(grads, axis=1) - 1.0) ** 2), grads


gp, grads = penalty()
print(float(tf.norm(grads)))
