# gradflow: buggy
# title: the gradient of an RNN's last state with respect to its initial state tensor
# source: https://github.com/tensorflow/tensorflow/issues/55262,
#   https://github.com/tensorflow/tensorflow/issues/54417
# shrunk: the reports' RNN (the gradient of h_t with respect to h0 is None) to a SimpleRNNCell
#   unrolled 5 steps in a traced function, batch of 4
# kind: function
# effect: none
# cause: unwatched
# line: 28
# fix: watch
# twin: function_unwatched_initial_state_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

cell = tf.keras.layers.SimpleRNNCell(6)
inputs = tf.constant(rng.normal(size=(5, 4, 3)).astype("float32"))
h0 = tf.zeros([4, 6])
cell.build((None, 3))


@tf.function
def sensitivity(inputs, h0):
    with tf.GradientTape() as tape:
        state = [h0]
        for t in range(5):
            out, state = cell(inputs[t], state)
        ht = tf.reduce_sum(out)
    grad = tape.gradient(ht, h0)
    _truth.record([grad], [h0])
    return grad


print(sensitivity(inputs, h0))
