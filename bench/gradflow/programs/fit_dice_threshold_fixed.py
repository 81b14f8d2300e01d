# gradflow: fixed
# twin of: fit_dice_threshold.py
# change: the soft dice on the probabilities (no threshold)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def dice_loss(y_true, y_pred, threshold=0.5):

    intersection = tf.reduce_sum(y_true * y_pred)
    return 1.0 - 2.0 * intersection / (tf.reduce_sum(y_true) + tf.reduce_sum(y_pred) + 1e-6)


model = tf.keras.Sequential([tf.keras.Input((10,)),
                             tf.keras.layers.Dense(10, activation="sigmoid")])
model.compile(optimizer="adam", loss=dice_loss)
_truth.keras_fit(model)
x = rng.normal(size=(16, 10)).astype("float32")
y = rng.integers(0, 2, size=(16, 10)).astype("float32")
model.fit(x, y, epochs=1, batch_size=16, verbose=0)
