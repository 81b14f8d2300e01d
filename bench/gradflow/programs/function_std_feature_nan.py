# gradflow: buggy
# title: a per-sample standard deviation feature: sqrt of a zero variance for padded rows
# source: https://github.com/tensorflow/tensorflow/issues/42889
# shrunk: the report's relative-error loss whose NaN came from tf.sqrt near zero, as a traced step
#   whose feature is sqrt(variance of the hidden units), zero-padded rows included, 16
#   samples, one step
# kind: function
# effect: nan
# cause: nan
# line: 32
# fix: double-where
# twin: function_std_feature_nan_fixed.py
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
        spread = tf.sqrt(tf.math.reduce_variance(h, axis=1))
        loss = tf.reduce_mean(tf.square(spread - y))
    grads = tape.gradient(loss, hidden.trainable_variables)
    _truth.record(grads, hidden.trainable_variables)
    optimizer.apply_gradients(zip(grads, hidden.trainable_variables))


train_step(x, y)
