"""tensorflow/docs guide/function.ipynb: a dynamic RNN with tf.range and tf.TensorArray
inside a tf.function (autograph turns the loop into a tf.while_loop)."""

import numpy as np
import tensorflow as tf

SOURCE = "tensorflow/docs guide/function.ipynb (Accumulating values in a loop)"


class DynamicRNN(tf.Module):
    def __init__(self, units, features):
        self.w = tf.Variable(
            tf.random.stateless_normal((features + units, units), seed=[1, 2]) * 0.3, name="cell_w"
        )
        self.frozen = tf.Variable(0.5, name="frozen_scale")

    @tf.function
    def __call__(self, input_data):
        batch, units = tf.shape(input_data)[0], self.w.shape[1]
        state = tf.zeros((batch, units))
        input_data = tf.transpose(input_data, [1, 0, 2])
        max_seq_len = input_data.shape[0]
        states = tf.TensorArray(tf.float32, size=max_seq_len)
        for i in tf.range(max_seq_len):
            joined = tf.concat([input_data[i], state], axis=1)
            state = tf.tanh(joined @ self.w) * tf.stop_gradient(self.frozen)  # stopped in loop
            states = states.write(i, state)
        return tf.transpose(states.stack(), [1, 0, 2])


def build():
    rnn = DynamicRNN(3, 2)
    x = np.random.default_rng(26).normal(size=(2, 4, 2)).astype("float32")
    return {
        "losses": {"states": lambda: tf.reduce_sum(rnn(x) ** 2)},
        "variables": [rnn.w, rnn.frozen],
    }
