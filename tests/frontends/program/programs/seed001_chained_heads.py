"""Seed 001: keep loss2's gradient out of output1_weights in a joint loss (TensorFlow 1)."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
tf.set_random_seed(0)

data = tf.placeholder(tf.int32, [None])
output1 = tf.placeholder(tf.int32, [None])
output2 = tf.placeholder(tf.int32, [None])

embedding_matrix = tf.get_variable(
    "embedding_matrix", [5, 3], tf.float32, initializer=tf.random_normal_initializer()
)
input_vectors = tf.nn.embedding_lookup(params=embedding_matrix, ids=data)
params_num0 = len(tf.trainable_variables())

output1_weights = tf.get_variable(
    "output1", [3, 4], tf.float32, initializer=tf.random_normal_initializer()
)
network_output1 = tf.matmul(input_vectors, output1_weights)
params_num1 = len(tf.trainable_variables())
loss1 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output1, logits=network_output1)

output2_weights = tf.get_variable(
    "output2", [4, 5], tf.float32, initializer=tf.random_normal_initializer()
)
network_output2 = tf.matmul(network_output1, output2_weights)
loss2 = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=output2, logits=network_output2)

params = tf.trainable_variables()
params1 = params[params_num0:params_num1]
params2 = params[params_num1:]

opt = tf.train.AdamOptimizer(0.01)
grads_vars = opt.compute_gradients(loss1, var_list=params1)
grads_vars2 = opt.compute_gradients(loss2, var_list=params2)
# without a var_list, loss2 reaches every variable
grads_all = opt.compute_gradients(loss2)
train_op = opt.apply_gradients(grads_vars + grads_vars2)

rng = np.random.default_rng(0)
feed_dict_v = {
    data: rng.integers(0, 5, size=100),
    output1: rng.integers(0, 4, size=100),
    output2: rng.integers(0, 5, size=100),
}

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(2):
        print(f"epoch:{i}")
        sess.run(train_op, feed_dict=feed_dict_v)
        print("output1_weights value:\n", sess.run(output1_weights))
