"""TensorFlow issue 30190's iris loop: a loss built per sample with float() and rebuilt with
tf.convert_to_tensor; the value left TensorFlow at float(), so every gradient is None."""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(3)]
)
x = np.random.RandomState(0).rand(6, 4).astype("float32")
y = np.array([0, 1, 2, 0, 1, 2])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
with tf.GradientTape() as tape:
    losses = []
    for i in range(len(x)):
        out = model(x[i : i + 1])
        losses.append(float(loss_fn(y[i : i + 1], out)))  # leaves TensorFlow
    loss = tf.convert_to_tensor(np.mean(losses))  # a new constant
grads = tape.gradient(loss, model.trainable_variables)
print([g is None for g in grads])
