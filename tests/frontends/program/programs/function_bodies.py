"""Paths cut inside the body of a ``tf.function`` the loss calls: an ``assign`` whose variable
the function then returns, and a ``stop_gradient``; the function called eagerly and from a
traced step. The cut is the op inside the body, at its own line and of its own kind, as
``inspect`` names it; never the call (``PartitionedCall``), which has a gradient."""

import tensorflow as tf

w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
u = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="u")
v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="v")
buf = tf.Variable(tf.zeros((2, 2)), trainable=False, name="buf")
x = tf.ones((3, 2))


@tf.function
def stash(a):
    buf.assign(a * 2.0)  # cut: assign
    return buf.read_value()


@tf.function
def head(a, b):
    frozen = tf.stop_gradient(a * 2.0)  # cut: stop
    return frozen + b


def loss():
    return tf.reduce_sum(tf.matmul(x, stash(w) + head(u, v)))


def build():
    return {"losses": {"main": loss}, "variables": [w, u, v]}


@tf.function
def step():
    with tf.GradientTape() as tape:
        value = loss()
    return tape.gradient(value, [w, u, v])  # call: traced


nones = {}
if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, [w, u, v])  # call: eager
    nones["eager"] = [g is None for g in grads]
    nones["traced"] = [g is None for g in step()]
