# gradflow: buggy
# title: a compression autoencoder's quantizer wrapped in stop_gradient: the encoder never learns
# source: https://github.com/Justin-Tan/generative-compression/issues/27
# shrunk: the generative-compression quantizer (stop_gradient around round) between a one-layer
#   encoder and decoder on 32 synthetic 8-feature samples, one step
# kind: tape
# effect: none
# cause: stop-gradient
# line: 25
# fix: straight-through
# twin: tape_quantizer_stop_gradient_fixed.py
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
    z_hat = tf.stop_gradient(tf.round(z))
    reconstruction = decoder(z_hat)
    loss = tf.reduce_mean(tf.square(x - reconstruction))
variables = encoder.trainable_variables + decoder.trainable_variables
grads = tape.gradient(loss, variables)
_truth.record(grads, variables)
optimizer.apply_gradients(zip(grads, variables))
