"""A Keras model with two heads, as a gradscope target: the auxiliary head sees a frozen body."""

import keras
import numpy as np
import tensorflow as tf


def build():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    body = keras.layers.Dense(8, activation="relu", name="body")(inputs)
    main = keras.layers.Dense(1, name="head_main")(body)
    aux = keras.layers.Dense(1, name="head_aux")(keras.ops.stop_gradient(body))
    model = keras.Model(inputs, [main, aux], name="net")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32")
    y = rng.normal(size=(16, 1)).astype("float32")
    return {
        "losses": {  # each a zero-argument callable
            "main": lambda: tf.reduce_mean(keras.losses.mean_squared_error(y, model(x)[0])),
            "aux": lambda: tf.reduce_mean(model(x)[1]),
        },
        "model": model,  # optional: names the variables, and gives the default ones
        "expect": {"aux": {"none": ["head_main/*"]}},  # optional, as in a spec
    }
