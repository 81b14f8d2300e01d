"""A training step whose encoder runs outside the tape: `pytest --gradscope` fails it."""

import numpy as np
import tensorflow as tf


def test_every_layer_trains():
    encoder = tf.keras.layers.Dense(4, name="encoder")
    head = tf.keras.layers.Dense(1, name="head")
    x = np.ones((8, 3), "float32")
    features = encoder(x)  # the bug: computed before the tape starts
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(head(features) ** 2)
    variables = encoder.trainable_variables + head.trainable_variables
    grads = tape.gradient(loss, variables)
    assert len(grads) == 4  # passes without --gradscope: nothing looks at the Nones
