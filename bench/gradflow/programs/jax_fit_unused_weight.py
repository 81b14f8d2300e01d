# gradflow: buggy
# title: Keras on JAX: a custom layer builds a weight its call never uses (no warning on JAX)
# source: https://github.com/remigenet/TKAT/issues/8,
#   https://github.com/tensorflow/probability/issues/927
# shrunk: an unused kernel of a custom layer (Gradients do not exist for variables
#   ['sub_tkan_kernel'] on the torch backend) to one unused weight in a layer trained with fit
#   on the JAX backend, 32 samples, one epoch
# kind: fit
# backend: jax
# effect: zero
# cause: unused
# line: 31
# fix: unread-variable
# twin: jax_fit_unused_weight_fixed.py
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
        self.gate = self.add_weight(shape=(4,), initializer="ones", name="gate")

    def call(self, inputs):
        return keras.ops.tanh(keras.ops.matmul(inputs, self.kernel))


model = keras.Sequential([keras.Input((6,)), Gated(), keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
