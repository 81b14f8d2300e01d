import tensorflow as tf

x = tf.Variable([[2.0, 3.0, 4.0], [1.0, 10.0, 100.0]], name="x")
patch = tf.Variable([[0.0, 1.0], [2.0, 3.0]], name="patch")
with tf.GradientTape() as tape:
    x[:2, :2].assign(patch)  # <- fix
    y = tf.tensordot(x, tf.transpose(x), axes=1)
    o = tf.reduce_mean(y)
grads = tape.gradient(o, [patch])
