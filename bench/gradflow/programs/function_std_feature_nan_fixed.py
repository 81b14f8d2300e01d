# gradflow: fixed
# twin of: function_std_feature_nan.py
# change: sqrt(variance + 1e-6)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(16, 6)).astype("float32")
x[12:] = 0.0
y = rng.normal(size=(16,)).astype("float32")
hidden = tf.keras.layers.Dense(8)
hidden.build((None, 6))
optimizer = tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        h = hidden(x)
        spread = tf.sqrt(tf.math.reduce_variance(h, axis=1) + 1e-6)
        loss = tf.reduce_mean(tf.square(spread - y))
    grads = tape.gradient(loss, hidden.trainable_variables)
    _truth.record(grads, hidden.trainable_variables)
    optimizer.apply_gradients(zip(grads, hidden.trainable_variables))


train_step(x, y)
