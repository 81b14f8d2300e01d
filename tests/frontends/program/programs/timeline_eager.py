"""An eager training loop of a small ReLU network, 30 steps, plain SGD."""

import tensorflow as tf
from parts import mlp

x, y, weights = mlp()
w1, b1, w2, b2 = (tf.Variable(value, name=name) for name, value in weights.items())
for _ in range(30):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(x @ w1 + b1)
        loss = tf.reduce_mean(tf.square(hidden @ w2 + b2 - y))
    grads = tape.gradient(loss, [w1, b1, w2, b2])
    for variable, grad in zip([w1, b1, w2, b2], grads, strict=True):
        variable.assign_sub(0.05 * grad)
print(f"loss {float(loss):.6f}")
