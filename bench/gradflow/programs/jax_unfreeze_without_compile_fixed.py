# gradflow: fixed
# twin of: jax_unfreeze_without_compile.py
# change: model.compile(...) again after base.trainable = True
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)

base = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu")])
model = keras.Sequential([base, keras.layers.Dense(1)])
x = rng.normal(size=(32, 4)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
base.trainable = False
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)

base.trainable = True
model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
_truth.snapshot(base.trainable_variables)
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
_truth.moved()
