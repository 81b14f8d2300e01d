"""A two-head Keras model whose second head was given no loss: ``gradscope run`` names the
head that trains nothing, the ``compile(loss=[..., None])`` line that left it out, and the fix.
(``make demo`` runs it first; ``gradscope run configs/keras_two_heads.py``.)"""

import keras
import numpy as np

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y1 = rng.normal(size=(64, 1)).astype("float32")
y2 = rng.normal(size=(64, 3)).astype("float32")

inputs = keras.Input((8,))
body = keras.layers.Dense(16, activation="relu", name="body")(inputs)
price = keras.layers.Dense(1, name="price")(body)
category = keras.layers.Dense(3, name="category")(body)
model = keras.Model(inputs, [price, category])
model.compile(optimizer="adam", loss=["mse", None])  # the bug: the category head has no loss
model.fit(x, [y1, y2], batch_size=32, epochs=1, verbose=0)
