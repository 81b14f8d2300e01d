# gradflow: buggy
# title: a focal loss with K.log(pt) and no epsilon: saturated predictions make NaN
# source: https://github.com/mkocabas/focal-loss-keras/issues/17,
#   https://github.com/hwei-hw/FocalLoss_Keras/issues/1
# shrunk: the repository's binary focal loss (no epsilon in the logs) on a one-layer sigmoid
#   classifier whose large weights saturate outputs to exactly 0 and 1, 32 samples, one epoch
# kind: fit
# effect: nan
# cause: nan
# line: 26, 27
# fix: safe-log
# twin: fit_focal_loss_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

K = tf.keras.backend


def focal_loss(y_true, y_pred, gamma=2.0, alpha=0.25):
    pt_1 = tf.where(tf.equal(y_true, 1), y_pred, tf.ones_like(y_pred))
    pt_0 = tf.where(tf.equal(y_true, 0), y_pred, tf.zeros_like(y_pred))
    return -K.sum(alpha * K.pow(1.0 - pt_1, gamma) * K.log(pt_1)) - K.sum(
        (1 - alpha) * K.pow(pt_0, gamma) * K.log(1.0 - pt_0)
    )


big = tf.keras.initializers.Constant(5.0)
output = tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer=big)
model = tf.keras.Sequential([tf.keras.Input((4,)), output])
model.compile(optimizer="sgd", loss=focal_loss)
_truth.keras_fit(model)
x = (10 * rng.normal(size=(32, 4))).astype("float32")
y = rng.integers(0, 2, size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
