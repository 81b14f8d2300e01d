# gradflow: buggy
# title: hidden activations rounded to 0/1 in the forward pass: the first layer gets nothing
# source: https://github.com/keras-team/keras/issues/9396
# shrunk: the report's network with activations in [0, 1] rounded before the next layer, to two
#   Dense layers on 32 synthetic samples, one step
# kind: tape
# effect: none
# cause: nondifferentiable
# line: 26
# fix: straight-through
# twin: tape_round_activations_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 8)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
hidden = tf.keras.layers.Dense(16, activation="sigmoid")
output = tf.keras.layers.Dense(1)
optimizer = tf.keras.optimizers.SGD(0.1)
with tf.GradientTape() as tape:
    h = hidden(x)
    h_binary = tf.round(h)
    loss = tf.reduce_mean(tf.square(output(h_binary) - y))
variables = hidden.trainable_variables + output.trainable_variables
grads = tape.gradient(loss, variables)
_truth.record(grads, variables)
optimizer.apply_gradients(zip(grads, variables))
