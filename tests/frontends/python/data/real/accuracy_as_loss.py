"""A common question ("No gradients provided for any variable" with accuracy as the loss):
argmax -> equal -> cast -> mean, next to the cross-entropy that does train."""

import keras
import numpy as np
import tensorflow as tf

SOURCE = "common question: accuracy used as a loss (argmax/equal/cast)"


def build():
    keras.utils.set_random_seed(27)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)]
    )
    x = np.random.default_rng(27).normal(size=(5, 4)).astype("float32")
    y = np.array([0, 1, 2, 1, 0])

    def accuracy_loss():
        predicted = tf.argmax(model(x), axis=1, output_type=tf.int32)
        return 1.0 - tf.reduce_mean(tf.cast(tf.equal(predicted, y), tf.float32))

    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {
        "losses": {"accuracy": accuracy_loss, "crossentropy": lambda: ce(y, model(x))},
        "model": model,
    }
