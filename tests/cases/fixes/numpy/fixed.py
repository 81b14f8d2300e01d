import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
with tf.GradientTape() as tape:
    h = w * 3.0
    v = tf.math.tanh(h)
    loss = tf.reduce_sum(v * 2.0)
grads = tape.gradient(loss, [w])
