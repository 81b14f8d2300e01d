# gradflow: fixed
# twin of: function_unwatched_initial_state.py
# change: tape.watch(h0) first in the tape
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
        tape.watch(h0)
        state = [h0]
        for t in range(5):
            out, state = cell(inputs[t], state)
        ht = tf.reduce_sum(out)
    grad = tape.gradient(ht, h0)
    _truth.record([grad], [h0])
    return grad


print(sensitivity(inputs, h0))
