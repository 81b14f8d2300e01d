# gradflow: buggy
# title: an L2 penalty with tf.norm over embedding rows: the zero padding row makes NaN
# source: https://github.com/tensorflow/tensorflow/issues/12071
# shrunk: the report's tf.norm at a zero row as a row-norm penalty on an embedding whose padding row
#   starts at zero, 8 ids, one step
# kind: tf1
# effect: nan
# cause: nan
# line: 27
# fix: double-where
# twin: tf1_padding_row_norm_nan_fixed.py
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
penalty = tf.reduce_sum(tf.norm(embedding, axis=1))
loss = tf.reduce_mean(tf.square(vectors - target)) + 0.01 * penalty
optimizer = v1.train.GradientDescentOptimizer(0.1)
grads_and_vars = optimizer.compute_gradients(loss)
train = optimizer.apply_gradients(grads_and_vars)
feed = {ids: rng.integers(0, 6, size=8), target: rng.normal(size=(8, 4))}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_and_vars, session=sess, feed_dict=feed)
    sess.run(train, feed)
