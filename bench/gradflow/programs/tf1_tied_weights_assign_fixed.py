# gradflow: fixed
# twin of: tf1_tied_weights_assign.py
# change: the decoder uses tf.transpose(encoder) itself instead of a copy made by assign
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 8])
z = v1.placeholder(tf.float32, [None, 3])  # the codes of a first stage, fed
encoder = v1.get_variable("encoder", [8, 3])

reconstruction = tf.matmul(z, tf.transpose(encoder))
loss = tf.reduce_mean(tf.square(x - reconstruction))
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss, var_list=[encoder])
feed = {x: rng.normal(size=(32, 8)), z: rng.normal(size=(32, 3))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
