import tensorflow as tf

p = tf.Variable([0.2, 0.7, 0.5], name="p")
cost = tf.constant([1.0, 2.0, 3.0])
with tf.GradientTape() as tape:
    u = tf.random.uniform([3], seed=2)
    b = tf.cast(u < p, tf.float32)
    per_sample = b * cost
    loss = tf.reduce_sum(per_sample)
    logp = b * tf.math.log(p) + (1 - b) * tf.math.log(1 - p)
    surrogate = tf.reduce_sum(tf.stop_gradient(per_sample) * logp)
    loss = loss + (surrogate - tf.stop_gradient(surrogate))
grads = tape.gradient(loss, [p])
