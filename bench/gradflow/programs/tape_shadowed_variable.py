# gradflow: buggy
# title: a trainable temperature created again inside the loss function shadows the real one
# source: https://github.com/keras-team/keras/issues/12503
# shrunk: a trainable variable defined inside a custom loss (never trained, per the report) to a
#   temperature-scaled cross-entropy in a custom loop, 32 samples, one step
# kind: tape
# effect: none
# cause: unused
# line: 27
# fix: -
# twin: tape_shadowed_variable_fixed.py
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
    temperature = tf.Variable(1.0, name="temperature")
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
