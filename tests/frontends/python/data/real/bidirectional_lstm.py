"""keras-io examples/nlp/bidirectional_lstm_imdb.py: Embedding and two Bidirectional LSTMs
(the LSTMs run tf.while_loop bodies)."""

import keras
import numpy as np
from keras import layers

SOURCE = "keras-team/keras-io examples/nlp/bidirectional_lstm_imdb.py"


def build():
    keras.utils.set_random_seed(8)
    inputs = keras.Input(shape=(None,), dtype="int32")
    x = layers.Embedding(30, 4)(inputs)
    x = layers.Bidirectional(layers.LSTM(4, return_sequences=True))(x)
    x = layers.Bidirectional(layers.LSTM(4))(x)
    outputs = layers.Dense(1, activation="sigmoid")(x)
    model = keras.Model(inputs, outputs)
    tokens = np.random.default_rng(8).integers(1, 30, (3, 5)).astype("int32")
    y = np.array([[1.0], [0.0], [1.0]], dtype="float32")
    loss_fn = keras.losses.BinaryCrossentropy()
    return {"losses": {"bce": lambda: loss_fn(y, model(tokens))}, "model": model}
