# gradflow: buggy
# title: Keras on JAX: a custom loss on argmax of the predictions trains nothing, silently
# source: https://github.com/google-deepmind/dm-haiku/issues/442,
#   https://github.com/keras-team/keras/issues/11157
# shrunk: the Haiku MLP whose loss took argmax (zero gradients) as a Keras model on the JAX backend
#   with the argmax loss of the Keras report, 32 samples, one epoch
# kind: fit
# backend: jax
# effect: zero
# cause: nondifferentiable
# line: 28
# fix: soft-argmax, differentiable-op, no-gradient-op
# twin: jax_argmax_loss_fixed.py
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)


def class_distance(y_true, y_pred):
    predicted = keras.ops.cast(keras.ops.argmax(y_pred, axis=-1), "float32")
    return keras.ops.abs(keras.ops.squeeze(y_true, -1) - predicted)


model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(4, activation="softmax")])
model.compile(optimizer="adam", loss=class_distance)
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
