# gradflow: fixed
# twin of: tape_manual_bce_nan.py
# change: the predictions clipped to [1e-7, 1 - 1e-7] before the logs
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = (10 * rng.normal(size=(32, 4))).astype("float32")
y = rng.integers(0, 2, size=(32, 1)).astype("float32")
big = tf.keras.initializers.Constant(5.0)
model = tf.keras.Sequential([
    tf.keras.Input((4,)),
    tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer=big),
])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    p = tf.clip_by_value(model(x), 1e-7, 1 - 1e-7)
    loss = -tf.reduce_mean(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
