"""Keras raises "No gradients provided for any variable": the loss goes through argmax."""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(8, 4)).astype("float32")
labels = rng.integers(0, 3, size=8)
model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(3, name="logits")], name="net"
)
optimizer = tf.keras.optimizers.SGD(0.1)

with tf.GradientTape() as tape:
    predicted = tf.argmax(model(x), axis=1)  # the bug: argmax has no gradient
    loss = tf.reduce_mean(tf.cast(predicted != labels, tf.float32))
grads = tape.gradient(loss, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
