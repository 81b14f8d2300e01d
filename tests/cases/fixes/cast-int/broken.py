import tensorflow as tf

w = tf.Variable([0.31, 0.77], name="w")
x = tf.constant([2.0, 3.0])
with tf.GradientTape() as tape:
    n = tf.cast(w * 10.0, tf.int32)  # <- fix
    loss = tf.reduce_sum(tf.cast(n, tf.float32) * x)
grads = tape.gradient(loss, [w])
