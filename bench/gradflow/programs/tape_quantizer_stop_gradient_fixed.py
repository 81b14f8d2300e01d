# gradflow: fixed
# twin of: tape_quantizer_stop_gradient.py
# change: the straight-through estimator the maintainer describes: z + stop_gradient(round(z) - z)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 8)).astype("float32")
encoder = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4)])
decoder = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as tape:
    z = encoder(x)
    z_hat = z + tf.stop_gradient(tf.round(z) - z)
    reconstruction = decoder(z_hat)
    loss = tf.reduce_mean(tf.square(x - reconstruction))
variables = encoder.trainable_variables + decoder.trainable_variables
grads = tape.gradient(loss, variables)
_truth.record(grads, variables)
optimizer.apply_gradients(zip(grads, variables))
