"""A Keras 3 layer that keeps its variables as raw tf.Variables (an attribute, a plain dict):
Keras does not track them, so model.trainable_variables, and the optimizer, leave them out."""

import keras
import tensorflow as tf


class Scaled(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.proj = keras.layers.Dense(2)
        self.shift = tf.Variable([0.5, -0.5], name="shift")  # untracked
        self.table = {"scale": tf.Variable(2.0, name="scale")}  # untracked

    def call(self, x):
        return self.proj(x) * self.table["scale"] + self.shift


model = keras.Sequential([keras.Input((3,)), Scaled()])
optimizer = keras.optimizers.SGD(0.1)
x, y = tf.random.normal((4, 3), seed=1), tf.random.normal((4, 2), seed=2)
with tf.GradientTape() as tape:
    loss = tf.reduce_mean((model(x) - y) ** 2)
grads = tape.gradient(loss, model.trainable_variables)  # asks
optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
