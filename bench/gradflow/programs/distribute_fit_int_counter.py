# gradflow: buggy
# title: model.fit under MirroredStrategy with an integer counter among the trainable weights
# source: https://github.com/tensorflow/recommenders/issues/138
# shrunk: the recommenders tutorial under MirroredStrategy (Gradients do not exist for variables
#   ['counter:0']) to a Dense model with an int32 counter weight, 2 logical CPUs, 32 samples,
#   one epoch
# kind: distribute
# effect: none
# cause: integer
# line: 27
# fix: not-floating
# twin: distribute_fit_int_counter_fixed.py
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)


class Counted(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 1), name="kernel")
        self.counter = self.add_weight(shape=(), initializer="zeros", dtype="int32",
                                       name="counter")

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel) * tf.cast(self.counter + 1, tf.float32)


with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((6,)), Counted()])
    model.compile(optimizer="sgd", loss="mse")
_truth.keras_fit(model)
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
