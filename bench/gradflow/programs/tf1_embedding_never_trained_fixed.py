# gradflow: fixed
# twin of: tf1_embedding_never_trained.py
# change: params1 = params[:params_num1]: loss1 trains the embedding too (the answer's comment)
import numpy as np
import tensorflow as tf

import _truth

tf.compat.v1.disable_eager_execution()
v1 = tf.compat.v1
rng = np.random.default_rng(0)

data = v1.placeholder(tf.int32, [None])
output1 = v1.placeholder(tf.int32, [None])
output2 = v1.placeholder(tf.int32, [None])
embedding_matrix = v1.get_variable("embedding_matrix", [5, 3], tf.float32,
                                   initializer=v1.random_normal_initializer())
input_vectors = tf.nn.embedding_lookup(params=embedding_matrix, ids=data)
params_num0 = len(v1.trainable_variables())
output1_weights = v1.get_variable("output1", [3, 4], tf.float32,
                                  initializer=v1.random_normal_initializer())
network_output1 = tf.matmul(input_vectors, output1_weights)
params_num1 = len(v1.trainable_variables())
loss1 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output1, logits=network_output1)
output2_weights = v1.get_variable("output2", [4, 5], tf.float32,
                                  initializer=v1.random_normal_initializer())
network_output2 = tf.matmul(network_output1, output2_weights)
loss2 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output2, logits=network_output2)

params = v1.trainable_variables()
params1 = params[:params_num1]
params2 = params[params_num1:]
opt = v1.train.AdamOptimizer(0.01)
grads_vars = opt.compute_gradients(loss1, var_list=params1)
grads_vars2 = opt.compute_gradients(loss2, var_list=params2)
train_op = opt.apply_gradients(grads_vars + grads_vars2)

feed_dict_v = {data: rng.integers(0, 5, size=100), output1: rng.integers(0, 4, size=100),
               output2: rng.integers(0, 5, size=100)}
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    _truth.record(grads_vars + grads_vars2, session=sess, feed_dict=feed_dict_v)
    _truth.snapshot(params, session=sess)
    for i in range(2):
        sess.run(train_op, feed_dict=feed_dict_v)
    _truth.moved(session=sess)
