# gradflow: fixed
# twin of: tape_call_skips_layers.py
# change: the last layer applied to the hidden output
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(64, 5)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")


class Model(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.linear1 = tf.keras.layers.Dense(32, activation="relu")
        self.linear2 = tf.keras.layers.Dense(32, activation="relu")
        self.linear3 = tf.keras.layers.Dense(16, activation="relu")
        self.linear4 = tf.keras.layers.Dense(1)

    def call(self, x):
        output = self.linear1(x)
        output = self.linear2(output)
        output = self.linear3(output)
        return self.linear4(output)


model = Model()
model(x)
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.square(model(x) - y))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
