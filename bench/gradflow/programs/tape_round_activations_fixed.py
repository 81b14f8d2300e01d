# gradflow: fixed
# twin of: tape_round_activations.py
# change: the straight-through estimator the thread ends with: h + stop_gradient(round(h) - h)
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
    h_binary = h + tf.stop_gradient(tf.round(h) - h)
    loss = tf.reduce_mean(tf.square(output(h_binary) - y))
variables = hidden.trainable_variables + output.trainable_variables
grads = tape.gradient(loss, variables)
_truth.record(grads, variables)
optimizer.apply_gradients(zip(grads, variables))
