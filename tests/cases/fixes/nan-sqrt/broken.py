import tensorflow as tf


def build():
    w = tf.Variable([0.0, 1.0], name="w")
    return {"losses": {"main": lambda: tf.reduce_sum(tf.sqrt(w))}}  # <- fix
