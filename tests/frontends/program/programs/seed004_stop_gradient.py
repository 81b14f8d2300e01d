"""Seed 004: what do tf.gradients, stop_gradients and tf.stop_gradient stop (TensorFlow 1)."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

rng = np.random.default_rng(0)
x_pure = rng.integers(-10, 100, 32)
x_train = x_pure + rng.normal(size=32) / 32
y_train = 3 * x_pure + 2 + rng.normal(size=32) / 32

x_input = tf.placeholder(tf.float32, name="x_input")
y_input = tf.placeholder(tf.float32, name="y_input")
w = tf.Variable(2.0, name="weight")
b = tf.Variable(1.0, name="biases")
y = tf.add(tf.multiply(x_input, w), b)

loss_op = tf.reduce_sum(tf.pow(y_input - y, 2)) / (2 * 32)
train_op = tf.train.GradientDescentOptimizer(0.0001).minimize(loss_op)
gradients_node = tf.gradients(loss_op, w)

# experiment 1: b = w1 * 3.0 * w2 with the first factor stopped
w1 = tf.Variable(2.0, name="w1")
w2 = tf.Variable(2.0, name="w2")
a = tf.multiply(w1, 3.0)
a_stopped = tf.stop_gradient(a)
b1 = tf.multiply(a_stopped, w2)
gradients = tf.gradients(b1, xs=[w1, w2])
print(gradients)

# experiment 2: the gradient comes back another way
a2 = tf.Variable(1.0, name="a2")
b2 = tf.Variable(1.0, name="b2")
c = tf.add(a2, b2)
c_stopped = tf.stop_gradient(c)
d = tf.add(a2, b2)
e = tf.add(c_stopped, d)
gradients2 = tf.gradients(e, xs=[a2, b2])

# stop_gradients: a tensor treated as a constant
a3 = tf.constant(0.0)
b3 = 2 * a3
g3 = tf.gradients(a3 + b3, [a3, b3], stop_gradients=[a3, b3])

sess = tf.Session()
sess.run(tf.global_variables_initializer())
for i in range(3):
    _, grads, loss = sess.run(
        [train_op, gradients_node, loss_op], feed_dict={x_input: x_train[i], y_input: y_train[i]}
    )
    print(f"epoch: {i} \t loss: {loss} \t gradients: {grads}")
print(sess.run(gradients[1:]), sess.run(gradients2), sess.run(g3))
sess.close()
