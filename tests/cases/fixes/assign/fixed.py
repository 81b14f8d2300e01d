import tensorflow as tf

x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]], name="x")
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]], name="patch")
with tf.GradientTape() as tape:
    paddings = [[0, 0], [0, 1]]
    mask = tf.pad(tf.ones_like(patch), paddings)
    x_new = x * (1 - mask) + tf.pad(patch, paddings)
    y = tf.tensordot(x_new, tf.transpose(x_new), axes=1)
    o = tf.reduce_mean(y)
grads = tape.gradient(o, [patch])
