"""Dying ReLUs in a tf.function step: 15 of 16 hidden units never fire; then it raises."""

import tensorflow as tf
from parts import mlp

x, y, weights = mlp(dead=True)
w1, b1, w2, b2 = (tf.Variable(value, name=name) for name, value in weights.items())
opt = tf.keras.optimizers.SGD(0.05)


@tf.function
def dying_step(x, y):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(x @ w1 + b1)
        loss = tf.reduce_mean(tf.square(hidden @ w2 + b2 - y))
    grads = tape.gradient(loss, [w1, b1, w2, b2])
    opt.apply_gradients(zip(grads, [w1, b1, w2, b2], strict=True))
    return loss


for _ in range(20):
    dying_step(x, y)
raise RuntimeError("the loss did not go down")
