# gradflow: buggy
# title: Keras on JAX: the base is unfrozen after compile() and fit() runs again without compiling
# source: https://github.com/osh/KerasGAN/issues/10, https://github.com/keras-team/keras/issues/4674
# shrunk: the reports' trainable flag changed without compiling again, as two-phase fine-tuning of a
#   one-layer base on the JAX backend, 32 samples, one epoch per phase
# kind: fit
# backend: jax
# effect: untrained
# cause: trainable-changed
# line: 33
# fix: compile-again
# twin: jax_unfreeze_without_compile_fixed.py
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
_truth.keras_fit(model)
_truth.snapshot(base.trainable_variables)
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
_truth.moved()
