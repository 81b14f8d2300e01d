import tensorflow as tf

x = tf.random.normal([1, 1, 8, 4], seed=1)
mean = tf.Variable(tf.zeros([4]), name="mean")
variance = tf.Variable(tf.ones([4]), name="variance")
scale, offset = tf.Variable(tf.ones([4])), tf.Variable(tf.zeros([4]))
with tf.GradientTape() as tape:
    y = tf.nn.batch_normalization(x, mean, variance, offset, scale, variance_epsilon=1e-3)
    loss = tf.reduce_sum(y * y)
grads = tape.gradient(loss, [mean, variance])
