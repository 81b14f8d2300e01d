"""model.fit on a two-output model whose compile() gives output "b" no loss."""

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
inputs = tf.keras.Input((4,))
body = tf.keras.layers.Dense(8, activation="relu", name="body")(inputs)
out_a = tf.keras.layers.Dense(1, name="a")(body)
out_b = tf.keras.layers.Dense(2, name="b")(body)
model = tf.keras.Model(inputs, {"a": out_a, "b": out_b})
model.compile(optimizer="sgd", loss={"a": "mse"})

rng = np.random.default_rng(0)
x = rng.normal(size=(32, 4)).astype("float32")
y = {"a": rng.normal(size=(32, 1)).astype("float32"),
     "b": rng.normal(size=(32, 2)).astype("float32")}
history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
print("loss", history.history["loss"][-1])
