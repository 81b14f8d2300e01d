# gradflow: buggy
# title: a traced training step over variables made from Python ints
# source: https://github.com/tensorflow/tensorflow/issues/43845
# shrunk: the report's GradientDescentOptimizer on integer variables (No gradients provided) to a
#   tf.function step of y = a x^2 + b with a Keras optimizer, 20 points
# kind: function
# effect: none
# cause: integer
# line: 21, 22
# fix: not-floating
# twin: function_int_variables_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = np.linspace(-1, 1, 20).astype("float32")
y = 2 * x**2 + 1
a = tf.Variable(1, name="a")
b = tf.Variable(0, name="b")
optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        prediction = tf.cast(a, tf.float32) * x**2 + tf.cast(b, tf.float32)
        loss = tf.reduce_mean(tf.square(prediction - y))
    grads = tape.gradient(loss, [a, b])
    _truth.record(grads, [a, b])
    optimizer.apply_gradients(zip(grads, [a, b]))


train_step()
