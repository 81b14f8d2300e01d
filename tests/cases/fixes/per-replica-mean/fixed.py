"""fixed.yaml in bare TensorFlow, trained on 2 replicas as MirroredStrategy trains it: each
replica's tape on its half of the batch, the replicas' gradients summed (apply_gradients'
all-reduce). ``changed``: per variable, whether that step is the whole batch's gradient."""

import numpy as np
import tensorflow as tf

x = tf.random.stateless_normal([8, 4], seed=(0, 1))
labels = tf.random.stateless_uniform([8], seed=(0, 2), maxval=3, dtype=tf.int32)
w = tf.Variable(tf.random.stateless_normal([4, 3], seed=(0, 3)), name="dense/w")
b = tf.Variable(tf.zeros([3]), name="dense/b")


def loss(xs, ys):
    ce = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=xs @ w + b)
    return tf.nn.compute_average_loss(ce, global_batch_size=8)  # over the global batch


def gradient(xs, ys):
    with tf.GradientTape() as tape:
        value = loss(xs, ys)
    return tape.gradient(value, [w, b])


replicas = [gradient(x[i : i + 4], labels[i : i + 4]) for i in (0, 4)]
# the loss the program reports: the replicas' sum (ReduceOp.SUM)
reported = tf.reduce_sum([loss(x[i : i + 4], labels[i : i + 4]) for i in (0, 4)])
step = [a + c for a, c in zip(*replicas, strict=True)]
with tf.GradientTape() as tape:  # one device, the whole batch
    whole = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x @ w + b)
    )
expected = tape.gradient(whole, [w, b])
changed = tuple(bool(np.allclose(s, e, rtol=1e-5)) for s, e in zip(step, expected, strict=True))
