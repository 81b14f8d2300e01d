"""Random draws inside and outside a tf.function, with a global seed and no op seeds."""

import tensorflow as tf

tf.random.set_seed(0)
w = tf.Variable(tf.ones([4, 1]), name="w")
v = tf.Variable(tf.ones([4, 1]), name="v")


@tf.function
def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.nn.dropout(x, 0.5) @ w)
    g = tape.gradient(loss, w)
    with tf.GradientTape() as tape2:  # a random op after the first gradient call
        loss2 = tf.reduce_sum(tf.nn.dropout(x, 0.5) @ v) + tf.reduce_sum(tf.random.normal([2]))
    g2 = tape2.gradient(loss2, v)
    w.assign_sub(0.1 * g)
    v.assign_sub(0.1 * g2)
    return loss, loss2


for _ in range(3):
    x = tf.random.normal([2, 4])
    with tf.GradientTape() as eager_tape:
        eager_loss = tf.reduce_sum(tf.nn.dropout(x, 0.3) * tf.transpose(w))
    eager_tape.gradient(eager_loss, w)
    a, b = step(x)
    print(f"{float(a):.6f} {float(b):.6f} {float(eager_loss):.6f}")
