"""Keras ``fit`` compiled with XLA, a loss whose gradient is NaN."""

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1, name="o")], name="net")


def bad_loss(y_true, y_pred):
    return tf.reduce_mean(tf.sqrt(y_pred - 100.0))


model.compile(optimizer="sgd", loss=bad_loss, jit_compile=True)
x, y = np.ones((8, 4), "float32"), np.ones((8, 1), "float32")
model.fit(x, y, batch_size=4, epochs=1, verbose=0)
