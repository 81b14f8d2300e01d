# gradflow: fixed
# twin of: jax_fit_unused_weight.py
# change: the unused weight removed
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)


class Gated(keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 4), name="kernel")


    def call(self, inputs):
        return keras.ops.tanh(keras.ops.matmul(inputs, self.kernel))


model = keras.Sequential([keras.Input((6,)), Gated(), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
