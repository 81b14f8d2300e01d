"""TensorFlow 1 gradients built and never run by a Session: their values were never computed."""

import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

w = tf.Variable(2.0, name="w")
b = tf.Variable(1.0, name="b")
loss = tf.nn.relu(-w) + b * 0.0  # a dead relu: both gradients are 0
ran = tf.gradients(loss, [w, b])
never = tf.gradients(loss, [w, b])
index = tf.argmax(tf.stack([w, b]))
never_none = tf.gradients(tf.cast(index, tf.float32) * w, [w, b])
sess = tf.Session()
sess.run(tf.global_variables_initializer())
print(sess.run(ran))
