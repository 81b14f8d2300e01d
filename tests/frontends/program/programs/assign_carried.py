"""A variable's value carried into another variable by a write, then read by the loss: the
write hides it from the tape, so TensorFlow gives the variable no gradient (``none:assign``).
The variable written is one no tape watches (not trainable), so the tape records neither its
read nor what is computed from it."""

import keras
import tensorflow as tf


class Scaler(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1],), initializer="ones", name="w")
        self.buf = self.add_weight(
            shape=(shape[-1],), trainable=False, initializer="zeros", name="buf"
        )

    def call(self, x):
        self.buf.assign(x[0] * self.w)  # copy: keras assign
        return x + self.buf


class Net(keras.Model):
    def __init__(self):
        super().__init__(name="net")
        self.scale = Scaler(name="scaler")
        self.head = keras.layers.Dense(1, name="head")

    def call(self, x):
        return self.head(self.scale(x))


class Plain(tf.Module):
    """A layer that is no Keras layer: its tf.Variable attributes."""

    def __init__(self):
        super().__init__(name="plain")
        self.w = tf.Variable([1.0, 2.0], name="w")
        self.buf = tf.Variable([0.0, 0.0], trainable=False, name="buf")

    def __call__(self, x):
        self.buf.assign_add(self.w * 2.0)  # copy: assign_add
        return x * self.buf


model = Net()
x = tf.random.stateless_normal((8, 4), seed=(1, 2))
y = tf.random.stateless_normal((8, 1), seed=(3, 4))
model(x)
nones = {}


def loss():
    return tf.reduce_mean((model(x, training=True) - y) ** 2)


with tf.GradientTape() as tape:
    value = loss()
grads = tape.gradient(value, model.trainable_variables)  # call: keras eager
nones["keras eager"] = [g is None for g in grads]


@tf.function
def step():
    with tf.GradientTape() as tape:
        value = loss()
    return tape.gradient(value, model.trainable_variables)  # call: keras function


nones["keras function"] = [g is None for g in step()]

plain = Plain()
with tf.GradientTape() as tape:
    total = tf.reduce_sum(plain(tf.constant([3.0, 4.0])))
grads = tape.gradient(total, [plain.w])  # call: plain assign_add
nones["plain assign_add"] = [g is None for g in grads]

w = tf.Variable([1.0, 2.0, 3.0])
rows = tf.Variable([0.0, 0.0, 0.0], trainable=False)
with tf.GradientTape() as tape:
    rows.scatter_update(tf.IndexedSlices(w[:2] * 2.0, tf.constant([0, 2])))  # copy: scatter
    total = tf.reduce_sum(rows * tf.constant([1.0, 2.0, 3.0]))
grads = tape.gradient(total, [w, w])  # call: scatter twice
nones["scatter twice"] = [g is None for g in grads]

v = tf.Variable([1.0, 2.0])
kept = tf.Variable([0.0, 0.0], trainable=False)


@tf.function
def keep():
    kept.assign(v * 2.0)  # copy: inside the tf.function


with tf.GradientTape() as tape:
    keep()
    total = tf.reduce_sum(kept * tf.constant([3.0, 4.0]))
grads = tape.gradient(total, [v])  # call: tf.function eager
nones["tf.function eager"] = [g is None for g in grads]


@tf.function
def kept_step():
    with tf.GradientTape() as tape:
        keep()
        total = tf.reduce_sum(kept * tf.constant([3.0, 4.0]))
    return tape.gradient(total, [v])  # call: tf.function traced


nones["tf.function traced"] = [g is None for g in kept_step()]
