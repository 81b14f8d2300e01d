# gradflow: fixed
# twin of: tf1_padding_row_norm_nan.py
# change: the row norms as sqrt(sum of squares + 1e-12)
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

ids = v1.placeholder(tf.int32, [None])
target = v1.placeholder(tf.float32, [None, 4])
initial = rng.normal(size=(6, 4)).astype("float32")
initial[0] = 0.0
embedding = tf.Variable(initial, name="embedding")
vectors = tf.nn.embedding_lookup(embedding, ids)
penalty = tf.reduce_sum(tf.sqrt(tf.reduce_sum(tf.square(embedding), axis=1) + 1e-12))
loss = tf.reduce_mean(tf.square(vectors - target)) + 0.01 * penalty
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
feed = {ids: rng.integers(0, 6, size=8), target: rng.normal(size=(8, 4))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
    sess.run(train, feed)
