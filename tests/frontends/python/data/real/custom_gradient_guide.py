"""tensorflow/docs guide/advanced_autodiff.ipynb: gradient clipping with tf.custom_gradient,
and a custom gradient that gives one input nothing."""

import tensorflow as tf

SOURCE = "tensorflow/docs guide/advanced_autodiff.ipynb (Custom gradients)"


@tf.custom_gradient
def clip_gradients(y):
    def backward(dy):
        return tf.clip_by_norm(dy, 0.5)

    return y, backward


@tf.custom_gradient
def scale_only_first(a, b):
    def backward(dy):
        return dy * b, None  # b gets no gradient (the grad_fn returns None)

    return a * b, backward


def build():
    v = tf.Variable(2.0, name="v")
    u = tf.Variable([1.0, 2.0], name="u")
    return {
        "losses": {
            "clipped": lambda: clip_gradients(v) * 3.0,
            "first_only": lambda: tf.reduce_sum(scale_only_first(u, v)),
        },
        "variables": [v, u],
    }
