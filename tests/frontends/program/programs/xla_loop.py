"""A custom XLA-compiled training loop (batch normalization, Adam): prints a digest of every
weight of the model and of its optimizer after training, bit for bit. The gradient of the
normalization's scale ends in a multiply that XLA computes inside Adam's update, where the CPU
code fuses it with the update's subtract (gradscope's tf.cond used to change that)."""

import hashlib

import keras
import numpy as np
import tensorflow as tf

keras.utils.set_random_seed(0)
rng = np.random.default_rng(3)
x = rng.normal(size=(24, 6)).astype("float32")
y = (x @ rng.normal(size=(6, 2))).astype("float32")
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"),
                          keras.layers.BatchNormalization(), keras.layers.Dense(2)])  # fmt: skip
optimizer = keras.optimizers.Adam(0.01)


@tf.function(jit_compile=True)
def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(xb, training=True) - yb))
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    return loss


for _epoch in range(2):
    for i in range(0, 24, 8):
        step(x[i : i + 8], y[i : i + 8])
digest = hashlib.sha256()
for w in [*model.weights, *optimizer.variables]:
    digest.update(np.asarray(keras.ops.convert_to_numpy(w)).tobytes())
print("weights", digest.hexdigest())
