# gradflow: fixed
# twin of: jax_argmax_loss.py
# change: sparse categorical cross-entropy on the probabilities
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)


def class_distance(y_true, y_pred):
    return keras.losses.sparse_categorical_crossentropy(y_true, y_pred)


model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(4, activation="softmax")])
model.compile(optimizer="adam", loss=class_distance)
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
