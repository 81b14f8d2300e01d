"""A Python target whose Keras runs on JAX (KERAS_BACKEND=jax), or on TensorFlow."""

import keras
import numpy as np
from keras import ops


def build():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 4)).astype("float32")
    y = rng.normal(size=(8, 1)).astype("float32")
    inp = keras.Input((4,))
    h = keras.layers.Dense(8, activation="tanh", name="body")(inp)
    a = keras.layers.Dense(1, name="a")(h)
    b = keras.layers.Dense(1, name="b")(ops.stop_gradient(h))
    spare = keras.layers.Dense(1, name="spare")(h)
    model = keras.Model(inp, [a, b, spare], name="heads")

    def main():
        pa, pb, _ = model(x)
        return ops.mean(ops.square(pa - y)) + ops.mean(ops.square(pb - y))

    def aux():
        _, pb, _ = model(x)
        return ops.mean(ops.round(pb))

    return {"losses": {"main": main, "aux": aux}, "model": model}
