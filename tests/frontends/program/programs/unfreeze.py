"""Fine-tuning without compile(): a base frozen for the first fit(), unfrozen for the second,
and a head frozen for it; the train step traced by the first fit() runs both."""

import numpy as np
import tensorflow as tf
from parts import seeded

inputs = tf.keras.Input((4,))
base = tf.keras.layers.Dense(8, activation="relu", name="base")
head = tf.keras.layers.Dense(1, name="head")
model = seeded(tf.keras.Model(inputs, head(base(inputs))), 11)
rng = np.random.default_rng(12)
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")

base.trainable = False
model.compile(optimizer="sgd", loss="mse")
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
base.trainable = True  # fine-tune the base...
head.trainable = False  # ...with the head kept as it is, but no compile() again
before = [w.copy() for w in model.get_weights()]
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
print("changed", [bool(np.any(a != b)) for a, b in zip(before, model.get_weights(), strict=True)])
