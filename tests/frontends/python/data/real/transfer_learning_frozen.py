"""keras-io guides/transfer_learning.py: a frozen base model (trainable = False) under a new
head, run in inference mode as the guide recommends."""

import keras
import numpy as np

SOURCE = "keras-team/keras-io guides/transfer_learning.py"


def build():
    keras.utils.set_random_seed(28)
    base_model = keras.Sequential(
        [keras.Input((6, 6, 3)), keras.layers.Conv2D(4, 3), keras.layers.BatchNormalization()],
        name="base",
    )
    base_model.trainable = False
    inputs = keras.Input(shape=(6, 6, 3))
    x = base_model(inputs, training=False)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(1)(x)
    model = keras.Model(inputs, outputs, name="transfer")
    data = np.random.default_rng(28).random((3, 6, 6, 3), dtype="float32")
    y = np.array([[1.0], [0.0], [1.0]], dtype="float32")
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    return {"losses": {"bce": lambda: loss_fn(y, model(data))}, "model": model}
