"""keras-io examples/nlp/addition_rnn.py: LSTM encoder, RepeatVector, LSTM decoder, Dense."""

import keras
import numpy as np
from keras import layers

SOURCE = "keras-team/keras-io examples/nlp/addition_rnn.py"


def build():
    keras.utils.set_random_seed(22)
    maxlen, chars, digits = 5, 12, 3
    model = keras.Sequential()
    model.add(layers.Input((maxlen, chars)))
    model.add(layers.LSTM(8))
    model.add(layers.RepeatVector(digits + 1))
    model.add(layers.LSTM(8, return_sequences=True))
    model.add(layers.Dense(chars, activation="softmax"))
    rng = np.random.default_rng(22)
    x = np.eye(chars, dtype="float32")[rng.integers(chars, size=(3, maxlen))]
    y = np.eye(chars, dtype="float32")[rng.integers(chars, size=(3, digits + 1))]
    loss_fn = keras.losses.CategoricalCrossentropy()
    return {"losses": {"cce": lambda: loss_fn(y, model(x))}, "model": model}
