# gradflow: buggy
# title: a custom layer keeps its scale in a raw tf.Variable: Keras 3 never tracks or trains it
# source: https://github.com/keras-team/keras/issues/16797,
#   https://github.com/tensorflow/tensorflow/issues/38211
# shrunk: the reports' tf.Variable attributes of a subclassed layer (some untracked, so never
#   trained) to one scale variable in a layer before a Dense head, 32 samples, 2 epochs
# kind: fit
# effect: untrained
# cause: untracked
# line: 24
# fix: build-add-weight
# twin: fit_untracked_tf_variable_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Scale(tf.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = tf.Variable(1.0, name="scale")

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
