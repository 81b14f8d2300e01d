# gradflow: buggy
# title: a custom Keras loss that compares argmax(y_pred) with the labels
# source: https://github.com/keras-team/keras/issues/11157
# shrunk: the report's backend-argmax loss to a 4-class classifier on 32 synthetic samples, one
#   epoch
# kind: fit
# effect: none
# cause: nondifferentiable
# line: 21
# fix: soft-argmax, differentiable-op, no-gradient-op
# twin: fit_argmax_custom_loss_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def class_distance(y_true, y_pred):
    predicted = tf.cast(tf.argmax(y_pred, axis=-1), tf.float32)
    return tf.abs(tf.squeeze(y_true, -1) - predicted)


model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(4, activation="softmax")])
model.compile(optimizer="adam", loss=class_distance)
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
