"""Keras on JAX: run with KERAS_BACKEND=jax gradscope run docs/examples/keras_jax.py"""

import keras
import numpy as np
from keras import ops

rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")

inputs = keras.Input((4,))
body = keras.layers.Dense(8, activation="tanh", name="body")(inputs)
logged = ops.stop_gradient(body)  # meant for a log line only
head = keras.layers.Dense(1, name="head")(logged)
model = keras.Model(inputs, head)
model.compile(optimizer=keras.optimizers.AdamW(weight_decay=0.1), loss="mse")
model.fit(x, y, batch_size=16, epochs=2, verbose=0)
