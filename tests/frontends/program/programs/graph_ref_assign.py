"""TensorFlow 1 reference variables copied with ``tf.assign``: patch reaches the loss only
through the assignment into x, read after it (control dependency) or as its output."""

import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]], name="x")
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]], name="patch")
update = tf.assign(x, tf.pad(patch, [[0, 0], [0, 1]]))
with tf.control_dependencies([update]):
    read = tf.identity(x)
loss = tf.reduce_mean(tf.tensordot(read, tf.transpose(read), axes=1))
after_read = tf.gradients(loss, [patch, x])
with tf.control_dependencies([update]):
    output = tf.identity(update)
through_output = tf.gradients(tf.reduce_mean(output), [patch, x])
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    print(sess.run([g for g in after_read + through_output if g is not None]))
