# gradflow: fixed
# twin of: fit_int_weight.py
# change: the counter made with trainable=False
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Counted(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 1), name="kernel")
        self.counter = self.add_weight(shape=(), initializer="zeros", dtype="int32",
                                       name="counter", trainable=False)

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel) * tf.cast(self.counter + 1, tf.float32)


model = tf.keras.Sequential([tf.keras.Input((6,)), Counted()])
model.compile(optimizer="sgd", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
