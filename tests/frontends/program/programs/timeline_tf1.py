"""A TensorFlow 1 program (disable_v2_behavior): a linear fit by tf.gradients, 4 Session steps."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x = np.arange(8, dtype=np.float32).reshape(8, 1) / 8
y = 3 * x + 1
w = tf.Variable([[0.5]], name="w")
b = tf.Variable([0.0], name="b")
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
grads = tf.gradients(loss, [w, b])
train = [w.assign_sub(0.1 * grads[0]), b.assign_sub(0.1 * grads[1])]
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for _ in range(4):
        session.run(train)
