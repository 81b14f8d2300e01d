# gradflow: buggy
# title: model.fit under MirroredStrategy with a custom layer whose extra weight is never used
# source: https://github.com/tensorflow/probability/issues/927,
#   https://github.com/keras-team/keras/issues/14104
# shrunk: a weight built and never used (the first report) in a Keras model trained with fit under
#   MirroredStrategy (the second report's setting), 2 logical CPUs, 32 samples, one epoch
# kind: distribute
# effect: none
# cause: unused
# line: 27
# fix: unread-variable
# twin: distribute_fit_unused_weight_fixed.py
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)


class Gated(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 4), name="kernel")
        self.gate = self.add_weight(shape=(4,), initializer="ones", name="gate")

    def call(self, inputs):
        return tf.nn.relu(tf.matmul(inputs, self.kernel))


with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((6,)), Gated(), tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
