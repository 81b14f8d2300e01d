# gradflow: fixed
# twin of: tape_argmax_loss.py
# change: cross-entropy on the logits instead of an error on their argmax
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=32).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(4)])
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as tape:
    logits = model(x)
    loss = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.cast(y, tf.int32), logits=logits)
    )
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
