"""A tf.function train step of a small ReLU network, 20 steps, Keras SGD."""

import tensorflow as tf
from parts import mlp

x, y, weights = mlp()
w1, b1, w2, b2 = (tf.Variable(value, name=name) for name, value in weights.items())
opt = tf.keras.optimizers.SGD(0.05)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(x @ w1 + b1)
        loss = tf.reduce_mean(tf.square(hidden @ w2 + b2 - y))
    grads = tape.gradient(loss, [w1, b1, w2, b2])
    opt.apply_gradients(zip(grads, [w1, b1, w2, b2], strict=True))
    return loss


for _ in range(20):
    loss = train_step(x, y)
print(f"loss {float(loss):.6f}")
