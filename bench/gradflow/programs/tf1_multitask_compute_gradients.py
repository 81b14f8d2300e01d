# gradflow: buggy
# title: compute_gradients(loss_1) of a multi-task model: the other task's variables get None
# source: seeds/000_767ffad522644674.txt
# shrunk: the question's body and two task heads to one matrix each; the gradient statistics it
#   collects to their norms
# kind: tf1
# effect: none
# cause: var-list
# line: 35
# fix: var-list
# twin: tf1_multitask_compute_gradients_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 4])
y1 = v1.placeholder(tf.float32, [None, 1])
y2 = v1.placeholder(tf.float32, [None, 1])
body = v1.get_variable("body", [4, 8])
task1 = v1.get_variable("task1", [8, 1])
task2 = v1.get_variable("task2", [8, 1])
h = tf.nn.relu(tf.matmul(x, body))
losses = [
    tf.reduce_mean(tf.square(tf.matmul(h, task1) - y1)),
    tf.reduce_mean(tf.square(tf.matmul(h, task2) - y2)),
]
task_index = 0
loss = losses[task_index]
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
feed = {x: rng.normal(size=(16, 4)), y1: rng.normal(size=(16, 1)), y2: rng.normal(size=(16, 1))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
    norms = sess.run({v.name: tf.norm(g) for g, v in grads_and_vars}, feed)
    print(norms)
