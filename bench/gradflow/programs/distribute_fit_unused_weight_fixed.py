# gradflow: fixed
# twin of: distribute_fit_unused_weight.py
# change: the unused weight removed
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


    def call(self, inputs):
        return tf.nn.relu(tf.matmul(inputs, self.kernel))


with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((6,)), Gated(), tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
