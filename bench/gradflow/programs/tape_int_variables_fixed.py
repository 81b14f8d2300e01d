# gradflow: fixed
# twin of: tape_int_variables.py
# change: W and b made from floats (2.0, 1.0)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=20).astype("float32")
y = 3 * x + 2
W = tf.Variable(2.0, name="W")
b = tf.Variable(1.0, name="b")
optimizer = tf.keras.optimizers.SGD(0.1)
with tf.GradientTape() as tape:
    prediction = tf.cast(W, tf.float32) * x + tf.cast(b, tf.float32)
    loss = tf.reduce_mean(tf.square(prediction - y))
grads = tape.gradient(loss, [W, b])
_truth.record(grads, [W, b])
optimizer.apply_gradients(zip(grads, [W, b]))
