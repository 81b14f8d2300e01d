# gradflow: buggy
# title: a custom layer's integer weight, trainable by default, is handed to the optimizer
# source: https://github.com/tensorflow/tensorflow/issues/73631,
#   https://github.com/tensorflow/recommenders/issues/138
# shrunk: the reports' int32 weight of a Keras layer (a counter; a scale) to a layer with an integer
#   step counter next to its float kernel, 32 samples, one epoch
# kind: fit
# effect: none
# cause: integer
# line: 24
# fix: not-floating
# twin: fit_int_weight_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Counted(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 1), name="kernel")
        self.counter = self.add_weight(shape=(), initializer="zeros", dtype="int32",
                                       name="counter")

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel) * tf.cast(self.counter + 1, tf.float32)


model = tf.keras.Sequential([tf.keras.Input((6,)), Counted()])
model.compile(optimizer="sgd", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
