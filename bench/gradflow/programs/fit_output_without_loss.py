# gradflow: buggy
# title: a two-output model compiled with a loss for one output only
# source: https://github.com/tensorflow/tensorflow/issues/35267
# shrunk: the report's two Dense outputs on two inputs to one input with two Dense heads (dict
#   outputs, as Keras 3 needs), 32 samples, one epoch
# kind: fit
# effect: none
# cause: unused
# line: 23
# fix: unread-output
# twin: fit_output_without_loss_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

inputs = tf.keras.Input(shape=(10,), name="input_a")
output_a = tf.keras.layers.Dense(1, name="output_a")(inputs)
output_b = tf.keras.layers.Dense(1, name="output_b")(inputs)
model = tf.keras.Model(inputs, {"output_a": output_a, "output_b": output_b})
model.compile(optimizer="sgd", loss={"output_a": "mse"})
_truth.keras_fit(model)
x = rng.normal(size=(32, 10)).astype("float32")
targets = {"output_a": rng.normal(size=(32, 1)), "output_b": rng.normal(size=(32, 1))}
model.fit(x, targets, epochs=1, batch_size=32, verbose=0)
