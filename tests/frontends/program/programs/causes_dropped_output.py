"""A subclassed model whose call() computes a second projection and returns the first (a
SimCLR-style encoder returning hiddens[0]). Prints bare TensorFlow's None-ness, then fits."""

import numpy as np
import tensorflow as tf


class Encoder(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.proj_0 = tf.keras.layers.Dense(8, activation="relu")
        self.proj_1 = tf.keras.layers.Dense(8)

    def call(self, x):
        hiddens = [self.proj_0(x)]
        hiddens.append(self.proj_1(hiddens[-1]))
        return hiddens[0]


model = Encoder()
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((4, 6), "float32"), np.zeros((4, 8), "float32")
with tf.GradientTape() as tape:
    loss = tf.reduce_mean((model(x) - y) ** 2)
print([g is None for g in tape.gradient(loss, model.trainable_variables)])
model.fit(x, y, epochs=1, batch_size=4, verbose=0)
