"""Seed 000: why does compute_gradients(loss) also return variables outside loss's subgraph?

A multi-task model in TensorFlow 1 style: one body, two task heads, one optimizer per loss.
"""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(0)

x = tf.placeholder(tf.float32, [None, 4], name="input")
with tf.variable_scope("body"):
    body_w = tf.get_variable("w", [4, 8])
    h = tf.nn.relu(tf.matmul(x, body_w))
with tf.variable_scope("task1"):
    task1_w = tf.get_variable("w", [8, 1])
    loss_1 = tf.reduce_mean(tf.square(tf.matmul(h, task1_w) - 1.0))
with tf.variable_scope("task2"):
    task2_w = tf.get_variable("w", [8, 1])
    loss_2 = tf.reduce_mean(tf.square(tf.matmul(h, task2_w) + 1.0))
losses = {1: loss_1, 2: loss_2}

# for simplicity, just demonstrate the case with the 1st task
task_index = 1
loss = losses[task_index]
optimizer = tf.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)

for g, v in grads_and_vars:
    print("  grad:", g, ", var:", v)

train_op = optimizer.apply_gradients([(g, v) for g, v in grads_and_vars if g is not None])
data = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(3):
        _, value = sess.run([train_op, loss], feed_dict={x: data})
        print("step", step, "loss", value)
