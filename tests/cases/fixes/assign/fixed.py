import tensorflow as tf

x = tf.Variable([[0.0, 0.0, 4.0], [0.0, 0.0, 100.0]], name="x")
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]], name="patch")
with tf.GradientTape() as tape:
    x_new = x + tf.pad(patch, [[0, 0], [0, 1]])
    y = tf.tensordot(x_new, tf.transpose(x_new), axes=1)
    o = tf.reduce_mean(y)
grads = tape.gradient(o, [patch])
