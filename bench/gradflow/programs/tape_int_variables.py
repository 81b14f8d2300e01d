# gradflow: buggy
# title: a linear fit whose variables were initialised with Python ints
# source: https://github.com/tensorflow/tensorflow/issues/27378,
#   https://github.com/tensorflow/tensorflow/issues/43845
# shrunk: y = W x + b fitted by gradient descent, W and b made from integers as in the reports, 20
#   points, one step
# kind: tape
# effect: none
# cause: integer
# line: 22, 23
# fix: not-floating
# twin: tape_int_variables_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=20).astype("float32")
y = 3 * x + 2
W = tf.Variable(2, name="W")
b = tf.Variable(1, name="b")
optimizer = tf.keras.optimizers.SGD(0.1)
with tf.GradientTape() as tape:
    prediction = tf.cast(W, tf.float32) * x + tf.cast(b, tf.float32)
    loss = tf.reduce_mean(tf.square(prediction - y))
grads = tape.gradient(loss, [W, b])
_truth.record(grads, [W, b])
optimizer.apply_gradients(zip(grads, [W, b]))
