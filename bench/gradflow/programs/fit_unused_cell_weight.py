# gradflow: buggy
# title: a custom recurrent cell builds a weight its call never uses
# source: https://github.com/tensorflow/probability/issues/927,
#   https://github.com/keras-team/keras/issues/12521
# shrunk: the report's hand-written GRU cell (an 'interim' weight that never trains) to a simple
#   cell with one unused weight inside keras.layers.RNN, 32 sequences, one epoch
# kind: fit
# effect: none
# cause: unused
# line: 31
# fix: unread-variable
# twin: fit_unused_cell_weight_fixed.py
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
        self.interim = self.add_weight(shape=(self.units, self.units), name="interim")

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
