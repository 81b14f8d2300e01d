"""tensorflow/docs tutorials/keras/regression.ipynb: an adapted Normalization layer and a DNN."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

SOURCE = "tensorflow/docs tutorials/keras/regression.ipynb"


def build():
    tf.keras.utils.set_random_seed(15)
    train_features = np.random.default_rng(15).normal(size=(8, 3)).astype("float32")
    train_labels = np.random.default_rng(16).normal(size=(8, 1)).astype("float32")
    normalizer = tf.keras.layers.Normalization(axis=-1)
    normalizer.adapt(train_features)
    model = tf.keras.Sequential(
        [
            normalizer,
            layers.Dense(8, activation="relu"),
            layers.Dense(8, activation="relu"),
            layers.Dense(1),
        ]
    )
    model.compile(loss="mean_absolute_error", optimizer=tf.keras.optimizers.Adam(0.001))
    loss_fn = tf.keras.losses.MeanAbsoluteError()
    return {"losses": {"mae": lambda: loss_fn(train_labels, model(train_features))}, "model": model}
