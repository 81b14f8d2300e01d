# gradflow: buggy
# title: a dice loss on predictions thresholded at 0.5
# source: https://github.com/j-c-carr/lightcones/issues/21
# shrunk: the repository's dice loss with a threshold (No gradients provided for any variable over a
#   3D U-Net) to a one-layer sigmoid segmenter on 16 samples, one epoch
# kind: fit
# effect: none
# cause: nondifferentiable
# line: 21
# fix: soft-comparison, differentiable-op
# twin: fit_dice_threshold_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def dice_loss(y_true, y_pred, threshold=0.5):
    y_pred = tf.cast(y_pred > threshold, tf.float32)
    intersection = tf.reduce_sum(y_true * y_pred)
    return 1.0 - 2.0 * intersection / (tf.reduce_sum(y_true) + tf.reduce_sum(y_pred) + 1e-6)


model = tf.keras.Sequential([tf.keras.Input((10,)),
                             tf.keras.layers.Dense(10, activation="sigmoid")])
model.compile(optimizer="adam", loss=dice_loss)
_truth.keras_fit(model)
x = rng.normal(size=(16, 10)).astype("float32")
y = rng.integers(0, 2, size=(16, 10)).astype("float32")
model.fit(x, y, epochs=1, batch_size=16, verbose=0)
