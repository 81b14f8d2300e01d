import tensorflow as tf

body = tf.Variable(tf.random.normal([4, 8], seed=1), name="body")
task1 = tf.Variable(tf.random.normal([8, 1], seed=2), name="task1")
task2 = tf.Variable(tf.random.normal([8, 1], seed=3), name="task2")
x = tf.random.normal([5, 4], seed=4)
with tf.GradientTape(persistent=True) as tape:
    h = x @ body
    loss1 = tf.reduce_mean(h @ task1)
    loss2 = tf.reduce_mean(h @ task2)
grads2 = tape.gradient(loss2, [body, task2])
grads = tape.gradient(loss1, [body, task1, task2])  # <- fix
