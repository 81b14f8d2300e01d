"""Keras trained with fit (on JAX or TensorFlow): an argmax cut, a stop_gradient, an output
no loss reads, and AdamW's weight decay, which on JAX moves the weights behind the
stop_gradient all the same."""

import keras
import numpy as np
from keras import ops


def build():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = [rng.normal(size=(32, 1)).astype("float32"), np.zeros((32, 2), "float32")]
    inp = keras.Input((4,))
    h = keras.layers.Dense(8, activation="tanh", name="body")(inp)
    head = keras.layers.Dense(3, name="head")(h)
    picked = ops.cast(ops.argmax(head, axis=-1), "float32")
    stopped = ops.stop_gradient(h)
    joined = ops.concatenate([stopped, ops.expand_dims(picked, -1)], -1)
    out = keras.layers.Dense(1, name="out")(joined)
    unused = keras.layers.Dense(2, name="unused")(h)
    model = keras.Model(inp, [out, unused], name="fit_model")
    model.compile(optimizer=keras.optimizers.AdamW(weight_decay=0.1), loss=["mse", None])
    return model, x, y


if __name__ == "__main__":
    model, x, y = build()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
