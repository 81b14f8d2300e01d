# gradflow: fixed
# twin of: tape_shadowed_variable.py
# change: the loss reads the temperature defined once outside it
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 3, size=32)
model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(3)])
temperature = tf.Variable(1.0, name="temperature")
optimizer = tf.keras.optimizers.SGD(0.1)


def loss_fn(labels, logits):
    scaled = logits / temperature
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=scaled)
    )


with tf.GradientTape() as tape:
    loss = loss_fn(y, model(x))
variables = [*model.trainable_variables, temperature]
grads = tape.gradient(loss, variables)
_truth.record(grads, variables)
optimizer.apply_gradients(zip(grads, variables))
