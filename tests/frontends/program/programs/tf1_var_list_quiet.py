"""TensorFlow 1 programs whose var_lists leave out variables the loss reads on purpose: none
of them is a variable that never trains (the program assigns it, or trains nothing)."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
feed = np.ones((4, 3), np.float32)

# a DQN: the target network is read by the loss, never in a var_list, and copied by assign
with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [None, 3])
    q_w = tf.get_variable("q_w", [3, 2])
    target_w = tf.get_variable("target_w", [3, 2])
    target = tf.stop_gradient(tf.reduce_max(tf.matmul(x, target_w), axis=1))
    loss = tf.reduce_mean((tf.reduce_max(tf.matmul(x, q_w), axis=1) - target) ** 2)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[q_w])
    sync = target_w.assign(q_w)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: feed})
        sess.run(sync)

# an adversarial example of a fixed model: gradients of the input, nothing trains
with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [None, 3])
    w = tf.get_variable("w", [3, 1])
    (grad,) = tf.gradients(tf.reduce_sum(tf.matmul(x, w)), [x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        print(sess.run(grad, {x: feed}).shape)

# fine-tuning the head of a base a checkpoint restores
with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [None, 3])
    base = tf.get_variable("base", [3, 3])
    head = tf.get_variable("head", [3, 1])
    loss = tf.reduce_sum(tf.matmul(tf.matmul(x, base), head))
    train = tf.train.AdamOptimizer(0.1).minimize(loss, var_list=[head])
    saver = tf.train.Saver([base])  # its restore writes the base
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {x: feed})
print("done")
