import tensorflow as tf

w1 = tf.Variable(tf.random.normal([3, 4], seed=1), name="output1")
w2 = tf.Variable(tf.random.normal([4, 5], seed=2), name="output2")
x = tf.random.normal([2, 3], seed=3)
with tf.GradientTape() as tape:
    out1 = x @ w1
    out2 = out1 @ w2
    loss2 = tf.reduce_sum(out2)
grads = tape.gradient(loss2, [w1, w2])
