"""Values computed and thrown away: a subclassed call() returning the wrong layer's output,
a TensorArray.write whose result is discarded in a tf.function."""

import tensorflow as tf


class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = tf.keras.layers.Dense(4, name="d1")
        self.d2 = tf.keras.layers.Dense(2, name="d2")

    def call(self, x):
        h = self.d1(x)
        out = self.d2(h)  # noqa: F841 - computed, never returned (the bug)
        return h


net = Net()
x = tf.ones((3, 5))
net(x)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(net(x))
print([g is None for g in tape.gradient(loss, net.trainable_variables)])

a = tf.Variable(1.0, name="a")
b = tf.Variable(2.0, name="b")


@tf.function
def step():
    with tf.GradientTape() as tape:
        ta = tf.TensorArray(tf.float32, size=2)
        ta = ta.write(0, a * 2.0)
        ta.write(1, b * 3.0)  # the new TensorArray is thrown away
        loss = tf.reduce_sum(ta.stack())
    return tape.gradient(loss, [a, b])


print([g is None for g in step()])
