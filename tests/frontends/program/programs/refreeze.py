"""Fine-tuning as public scripts do it: fit(), freeze a layer without compile(), fit() again.
Each fit() runs 8 steps; the second reuses the step Keras traced for the first, which still
trains the frozen layer."""

import numpy as np
import tensorflow as tf
from parts import seeded

inputs = tf.keras.Input((4,))
base = tf.keras.layers.Dense(8, activation="relu", name="base")
head = tf.keras.layers.Dense(1, name="head")
model = seeded(tf.keras.Model(inputs, head(base(inputs))), 21)
rng = np.random.default_rng(22)
x = rng.normal(size=(64, 4)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
base.trainable = False  # freeze the base for the second fit(), with no compile() again
before = [w.copy() for w in model.get_weights()]
model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
print("changed", [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)])
