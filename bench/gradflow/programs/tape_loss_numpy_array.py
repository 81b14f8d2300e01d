# gradflow: buggy
# title: a custom loss turns the predictions into a numpy array before computing the error
# source: https://github.com/tensorflow/tensorflow/issues/36596,
#   https://github.com/tensorflow/tensorflow/issues/50111
# shrunk: the reports' custom losses that converted the model's predictions to numpy arrays to a
#   weighted squared error with np.asarray, 32 samples, one step
# kind: tape
# effect: none
# cause: numpy
# line: 28
# fix: keep-tensorflow-ops
# twin: tape_loss_numpy_array_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 5)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
weights = np.linspace(0.5, 1.5, 32).astype("float32")[:, None]
model = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)


def weighted_error(y_true, y_pred):
    predictions = np.asarray(y_pred)
    return tf.reduce_mean(weights * (y_true - predictions) ** 2)


with tf.GradientTape() as tape:
    loss = weighted_error(y, model(x))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
