"""One tf.function step, traced twice: for the GAN's discriminator with the auxiliary scale
on, then for the generator with it off, where the scale the step still asks for gets no
gradient. The second trace is a different computation at the same call site."""

import tensorflow as tf

disc = tf.Variable([[1.0], [2.0]], name="disc")
gen = tf.Variable([[1.0], [2.0]], name="gen")
aux = tf.Variable([3.0], name="aux")


@tf.function(reduce_retracing=True)
def grads_of(x, w, use_aux):
    with tf.GradientTape() as tape:
        y = tf.matmul(x, w)
        if use_aux:
            y = y * aux
        loss = tf.reduce_sum(y)
    return tape.gradient(loss, [w, aux])


for _ in range(3):
    grads_of(tf.ones([2, 2]), disc, True)
    grads_of(tf.ones([3, 2]), gen, False)
    grads_of(tf.ones([3, 2]), gen, False)
