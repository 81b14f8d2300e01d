"""tensorflow/docs guide/autodiff.ipynb, "Cases where gradient returns None": a variable
replaced by a tensor, an integer cast, a stateful assign, and stop_gradient."""

import tensorflow as tf

SOURCE = "tensorflow/docs guide/autodiff.ipynb (Cases where gradient returns None)"


def build():
    x = tf.Variable(2.0, name="x")
    y = tf.Variable(3.0, name="y")
    x0 = tf.Variable(3.0, name="x0")
    x1 = tf.Variable(0.0, name="x1")

    def not_watched():
        z = y * y  # y is a variable; z is a tensor
        return z * tf.stop_gradient(x)

    def integer():
        as_int = tf.cast(x * 2.0, tf.int32)  # the guide: an integer cast
        return tf.cast(as_int, tf.float32) + y

    def stateful():
        x1.assign_add(x0)  # update x1 = x1 + x0
        return x1**2  # y = (x1 + x0)**2

    def stopped():
        return x * tf.stop_gradient(y)

    return {
        "losses": {
            "not_watched": not_watched,
            "integer": integer,
            "stateful": stateful,
            "stopped": stopped,
        },
        "variables": [x, y, x0, x1],
    }
