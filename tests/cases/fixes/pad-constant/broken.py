import tensorflow as tf

x = tf.random.normal([3, 4], seed=1)
fill = tf.Variable(1.5, name="fill")
paddings = [[1, 1], [0, 0]]
with tf.GradientTape() as tape:
    padded = tf.pad(x, paddings, constant_values=fill)  # <- fix
    loss = tf.reduce_sum(padded * padded)
grads = tape.gradient(loss, [fill])
