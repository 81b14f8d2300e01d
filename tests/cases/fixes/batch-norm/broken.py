import tensorflow as tf

x = tf.random.normal([1, 1, 8, 4], seed=1)
mean = tf.Variable(tf.zeros([4]), name="mean")
variance = tf.Variable(tf.ones([4]), name="variance")
scale, offset = tf.Variable(tf.ones([4])), tf.Variable(tf.zeros([4]))
bn = tf.compat.v1.nn.fused_batch_norm
with tf.GradientTape() as tape:
    y, _, _ = bn(x, scale, offset, mean, variance, is_training=False)  # <- fix
    loss = tf.reduce_sum(y * y)
grads = tape.gradient(loss, [mean, variance])
