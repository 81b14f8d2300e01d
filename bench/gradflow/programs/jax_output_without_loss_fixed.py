# gradflow: fixed
# twin of: jax_output_without_loss.py
# change: a loss for output_b too
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)

inputs = keras.Input(shape=(10,), name="input_a")
output_a = keras.layers.Dense(1, name="output_a")(inputs)
output_b = keras.layers.Dense(1, name="output_b")(inputs)
model = keras.Model(inputs, {"output_a": output_a, "output_b": output_b})
optimizer = keras.optimizers.AdamW(1e-2, weight_decay=0.1)
model.compile(optimizer=optimizer, loss={"output_a": "mse", "output_b": "mse"})
_truth.keras_fit(model)
x = rng.normal(size=(32, 10)).astype("float32")
targets = {"output_a": rng.normal(size=(32, 1)), "output_b": rng.normal(size=(32, 1))}
model.fit(x, targets, epochs=1, batch_size=32, verbose=0)
