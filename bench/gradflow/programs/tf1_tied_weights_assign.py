# gradflow: buggy
# title: a tied autoencoder copies the encoder's transpose into the decoder with assign
# source: https://github.com/sifubro/tensorflow, seeds/003_6c1be3b4f4b0df01.txt
# shrunk: the notebook's point (assign blocks gradients: there is no plan to give tf.assign a
#   gradient, as the seed's answer quotes) as the decoder of a tied autoencoder trained on fed
#   codes, its weights the encoder's transpose copied by assign, 32 samples, one step
# kind: tf1
# effect: none
# cause: assign
# line: 26
# fix: assign-as-tensor
# twin: tf1_tied_weights_assign_fixed.py
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

x = v1.placeholder(tf.float32, [None, 8])
z = v1.placeholder(tf.float32, [None, 3])  # the codes of a first stage, fed
encoder = v1.get_variable("encoder", [8, 3])
decoder = v1.get_variable("decoder", [3, 8], trainable=False)
tie = v1.assign(decoder, tf.transpose(encoder))
with tf.control_dependencies([tie]):
    reconstruction = tf.matmul(z, decoder.read_value())
loss = tf.reduce_mean(tf.square(x - reconstruction))
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss, var_list=[encoder])
feed = {x: rng.normal(size=(32, 8)), z: rng.normal(size=(32, 3))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
