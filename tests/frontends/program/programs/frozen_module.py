"""A model built, compiled and frozen in a module the program imports (``frozen_elsewhere.py``)."""

import keras
from parts import seeded

inputs = keras.Input((6,))
base = keras.layers.Dense(8, activation="relu", name="base")
model = seeded(keras.Model(inputs, keras.layers.Dense(2, name="head")(base(inputs))), 31)
model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
base.trainable = False
