# gradflow: fixed
# twin of: fit_untracked_tf_variable.py
# change: the scale made with self.add_weight
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Scale(tf.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

    def call(self, inputs):
        return inputs * self.scale


scale = Scale()
model = tf.keras.Sequential([tf.keras.Input((6,)), scale, tf.keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
_truth.snapshot([scale.scale])
model.fit(x, y, epochs=2, batch_size=32, verbose=0)
_truth.moved()
