# gradflow: fixed
# twin of: fit_unused_cell_weight.py
# change: the unused weight removed from build()
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class MyCell(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units

    def build(self, input_shape):
        dim = input_shape[-1]
        self.kernel = self.add_weight(shape=(dim, self.units), name="kernel")
        self.recurrent = self.add_weight(shape=(self.units, self.units), name="recurrent")


    def call(self, inputs, states):
        h = tf.tanh(tf.matmul(inputs, self.kernel) + tf.matmul(states[0], self.recurrent))
        return h, [h]


model = tf.keras.Sequential([
    tf.keras.Input((5, 3)),
    tf.keras.layers.RNN(MyCell(4)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 5, 3)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
