"""A quantization-aware layer with the straight-through estimator (the pattern of
TensorFlow Model Optimization's fake quantization, written out by hand): round() has no
gradient, x + stop_gradient(round(x) - x) passes it straight through."""

import numpy as np
import tensorflow as tf

SOURCE = "straight-through estimator, as in tensorflow/model-optimization fake quantization"


def build():
    tf.keras.utils.set_random_seed(20)
    dense = tf.keras.layers.Dense(3, name="quantized")
    x = np.random.default_rng(20).normal(size=(4, 5)).astype("float32")

    def quantize(t, scale=4.0):
        return t + tf.stop_gradient(tf.round(t * scale) / scale - t)

    def rounded():  # the naive version: round() cuts the path
        return tf.reduce_sum(tf.round(dense(x) * 4.0) / 4.0)

    dense(x)
    return {
        "losses": {"ste": lambda: tf.reduce_sum(quantize(dense(x)) ** 2), "rounded": rounded},
        "variables": dense.trainable_variables,
    }
