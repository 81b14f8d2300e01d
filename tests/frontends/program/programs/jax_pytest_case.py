"""A test file run with pytest --gradscope on Keras' JAX backend (tests/.../test_jax_doors.py)."""

import keras
import numpy as np
from keras import ops


def test_fit_with_a_stopped_body():
    x = np.ones((8, 4), "float32")
    inp = keras.Input((4,))
    h = keras.layers.Dense(4, name="body")(inp)
    model = keras.Model(inp, keras.layers.Dense(1, name="out")(ops.stop_gradient(h)))
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, np.ones((8, 1), "float32"), verbose=0)
