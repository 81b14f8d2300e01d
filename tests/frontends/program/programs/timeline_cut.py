"""Two gradient call sites over 12 steps: a traced discriminator step whose generator is cut
off by stop_gradient, and an eager loop whose head is cut off from step 6 on; b starts at 0."""

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(0)
x = tf.constant(rng.randn(8, 4).astype("float32"))
y = tf.constant(rng.randn(8, 1).astype("float32"))
gen = tf.Variable(rng.randn(4, 4).astype("float32"), name="gen/w")
disc = tf.Variable(rng.randn(4, 1).astype("float32"), name="disc/w")
w = tf.Variable(rng.randn(4, 3).astype("float32"), name="w")
b = tf.Variable(tf.zeros([3]), name="b")
w2 = tf.Variable(rng.randn(3, 1).astype("float32"), name="w2")
head = tf.Variable(rng.randn(3, 1).astype("float32"), name="head")


@tf.function
def disc_step():
    with tf.GradientTape() as tape:
        fake = tf.stop_gradient(x @ gen)
        loss = tf.reduce_mean(tf.nn.softplus(fake @ disc))
    grads = tape.gradient(loss, [disc, gen])
    disc.assign_sub(0.1 * grads[0])


for step in range(1, 13):
    disc_step()
    with tf.GradientTape() as tape:
        h = tf.tanh(x @ w + b)
        side = h @ head if step <= 5 else tf.stop_gradient(h @ head)
        loss = tf.reduce_mean((h @ w2 - y) ** 2) + tf.reduce_mean(side**2)
    grads = tape.gradient(loss, [w, b, w2, head])
    for variable, grad in zip([w, b, w2, head], grads, strict=True):
        if grad is not None:
            variable.assign_sub(0.1 * grad)
