"""An XLA-compiled train step: sqrt of w's negative entry gives a NaN gradient, relu(-u) a
zero one, and v an ordinary one that changes every step."""

import tensorflow as tf

w = tf.Variable([-1.0, 2.0], name="w")
u = tf.Variable([1.0, 1.0], name="u")
v = tf.Variable([1.0, 2.0], name="v")


@tf.function(jit_compile=True)
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.sqrt(w)) + tf.reduce_sum(tf.nn.relu(-u)) + tf.reduce_sum(v * v)
    grads = tape.gradient(loss, [w, u, v])
    v.assign_sub(0.1 * grads[2])
    return loss


for i in range(3):
    step()
    print("step", i)
