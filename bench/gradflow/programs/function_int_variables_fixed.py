# gradflow: fixed
# twin of: function_int_variables.py
# change: a and b made from floats
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = np.linspace(-1, 1, 20).astype("float32")
y = 2 * x**2 + 1
a = tf.Variable(1.0, name="a")
b = tf.Variable(0.0, name="b")
optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        prediction = tf.cast(a, tf.float32) * x**2 + tf.cast(b, tf.float32)
        loss = tf.reduce_mean(tf.square(prediction - y))
    grads = tape.gradient(loss, [a, b])
    _truth.record(grads, [a, b])
    optimizer.apply_gradients(zip(grads, [a, b]))


train_step()
