import tensorflow as tf

w = tf.Variable([0.2, 0.9, 0.6], name="w")
with tf.GradientTape() as tape:
    h = w * 1.5
    mask = tf.cast(h > 0.5, tf.float32)  # <- fix
    loss = tf.reduce_sum(mask)
grads = tape.gradient(loss, [w])
