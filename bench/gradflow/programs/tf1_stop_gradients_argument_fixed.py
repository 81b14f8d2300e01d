# gradflow: fixed
# twin of: tf1_stop_gradients_argument.py
# change: one compute_gradients per loss with its own var_list (the answer)
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

data = v1.placeholder(tf.int32, [None])
output1 = v1.placeholder(tf.int32, [None])
output2 = v1.placeholder(tf.int32, [None])
embedding_matrix = v1.get_variable("embedding_matrix", [5, 3])
input_vectors = tf.nn.embedding_lookup(params=embedding_matrix, ids=data)
output1_weights = v1.get_variable("output1", [3, 4])
network_output1 = tf.matmul(input_vectors, output1_weights)
loss1 = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output1, logits=network_output1)
)
output2_weights = v1.get_variable("output2", [4, 5])
network_output2 = tf.matmul(network_output1, output2_weights)
loss2 = tf.reduce_mean(
    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output2, logits=network_output2)
)
params = [embedding_matrix, output1_weights, output2_weights]
opt = v1.train.AdamOptimizer(0.01)
grads_vars1 = opt.compute_gradients(loss1, var_list=[embedding_matrix, output1_weights])
grads_vars2 = opt.compute_gradients(loss2, var_list=[output2_weights])
train_op = opt.apply_gradients(grads_vars1 + grads_vars2)
feed = {data: rng.integers(0, 5, size=50), output1: rng.integers(0, 4, size=50),
        output2: rng.integers(0, 5, size=50)}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_vars1 + grads_vars2, session=sess, feed_dict=feed)
    sess.run(train_op, feed)
