import tensorflow as tf

x = tf.constant([1.0, 2.0, 3.0])
with tf.GradientTape() as tape:
    y = tf.reduce_sum(x * x)
grads = tape.gradient(y, [x])  # <- fix
