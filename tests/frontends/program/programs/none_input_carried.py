"""A variable's value carried by a write into a batch norm's ``mean``: the tape never records
the read of the variable written, and TensorFlow's batch norm gradient gives ``mean`` none
(``FusedBatchNormV3``'s gradient is None for its mean and variance inputs). The last cut on
the path is the batch norm, as ``inspect`` says, not the write before it."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0, 3.0], name="w")
scale = tf.Variable([1.0, 1.0, 1.0], name="scale")
mean = tf.Variable(tf.zeros(3), trainable=False, name="mean")
x = tf.random.stateless_normal((2, 4, 4, 3), seed=(1, 2))


def loss():
    mean.assign(w * 0.5)
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(  # cut: batch norm
        x, scale, tf.zeros(3), mean=mean, variance=tf.ones(3), is_training=False
    )
    return tf.reduce_sum(y * y)


def build():
    return {"losses": {"main": loss}, "variables": [w, scale]}


nones = []
if __name__ == "__main__":
    with tf.GradientTape() as tape:
        value = loss()
    nones = [g is None for g in tape.gradient(value, [w, scale])]  # call: eager
