import tensorflow as tf

w = tf.Variable(tf.random.normal([3, 4], seed=1), name="w")
x = tf.random.normal([8, 3], seed=2)
reward = tf.constant([1.0, 0.0, 2.0, 0.5])
with tf.GradientTape() as tape:
    logits = x @ w
    pred = tf.one_hot(tf.argmax(logits, axis=1), 4)  # <- fix
    loss = -tf.reduce_sum(pred * reward)
grads = tape.gradient(loss, [w])
