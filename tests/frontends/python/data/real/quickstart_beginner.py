"""tensorflow/docs site/en/tutorials/quickstart/beginner.ipynb: Flatten, Dense, Dropout."""

import numpy as np
import tensorflow as tf

SOURCE = "tensorflow/docs tutorials/quickstart/beginner.ipynb"


def build():
    tf.keras.utils.set_random_seed(1)
    model = tf.keras.models.Sequential(
        [
            tf.keras.layers.Input((6, 6)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dropout(0.2),
            tf.keras.layers.Dense(10),
        ]
    )
    x = np.random.default_rng(1).random((5, 6, 6), dtype="float32")
    y = np.array([0, 1, 2, 3, 4])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    return {"losses": {"loss": lambda: loss_fn(y, model(x))}, "model": model}
