import tensorflow as tf

w = tf.Variable([0.2, 0.7], name="w")
with tf.GradientTape() as tape:
    h = w * 3.0
    v = tf.clip_by_value(h, 0.0, 1.0)
    loss = tf.reduce_sum(v * 2.0)
grads = tape.gradient(loss, [w])
