"""keras-io examples/nlp/text_classification_from_scratch.py: Embedding, Conv1D, pooling."""

import keras
import numpy as np
from keras import layers

SOURCE = "keras-team/keras-io examples/nlp/text_classification_from_scratch.py"


def build():
    keras.utils.set_random_seed(7)
    inputs = keras.Input(shape=(None,), dtype="int64")
    x = layers.Embedding(50, 8)(inputs)
    x = layers.Dropout(0.5)(x)
    x = layers.Conv1D(8, 3, padding="valid", activation="relu", strides=1)(x)
    x = layers.GlobalMaxPooling1D()(x)
    x = layers.Dense(8, activation="relu")(x)
    predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
    model = keras.Model(inputs, predictions)
    tokens = np.random.default_rng(7).integers(0, 50, (4, 10))
    labels = np.array([[0.0], [1.0], [1.0], [0.0]], dtype="float32")
    loss_fn = keras.losses.BinaryCrossentropy()
    return {"losses": {"bce": lambda: loss_fn(labels, model(tokens))}, "model": model}
