"""Mixed precision: fit with a LossScaleOptimizer, then a float16 loop whose gradient underflows."""

import numpy as np
import tensorflow as tf
from parts import seeded

tf.keras.mixed_precision.set_global_policy("mixed_float16")
inputs = tf.keras.Input((4,))
outputs = tf.keras.layers.Dense(1, dtype="float32", name="head")(
    tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
)
model = seeded(tf.keras.Model(inputs, outputs), 7)
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
rng = np.random.default_rng(8)
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
print("scale", float(model.optimizer.dynamic_scale.numpy()))

tf.keras.mixed_precision.set_global_policy("float32")
w = tf.Variable(tf.ones([3], tf.float16), name="tiny")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * tf.constant(1e-4, tf.float16) * tf.constant(1e-4, tf.float16))
print("grad", tape.gradient(loss, w).numpy())
