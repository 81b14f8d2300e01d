import tensorflow as tf


def build():
    s = tf.Variable([0.0, 2.0], name="s")
    x = tf.constant([1.0, 3.0])
    return {"losses": {"main": lambda: tf.reduce_sum(x / s)}}  # <- fix
