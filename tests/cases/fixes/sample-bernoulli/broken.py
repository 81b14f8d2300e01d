import tensorflow as tf

p = tf.Variable([0.2, 0.7, 0.5], name="p")
cost = tf.constant([1.0, 2.0, 3.0])
with tf.GradientTape() as tape:
    u = tf.random.uniform([3], seed=2)
    b = tf.cast(u < p, tf.float32)  # <- fix
    loss = tf.reduce_sum(b * cost)
grads = tape.gradient(loss, [p])
