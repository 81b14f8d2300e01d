"""An eager loop stopped by Ctrl-C (a KeyboardInterrupt) during its 12th step."""

import tensorflow as tf
from parts import mlp

x, y, weights = mlp()
w1, b1, w2, b2 = (tf.Variable(value, name=name) for name, value in weights.items())
for step in range(1, 30):
    with tf.GradientTape() as tape:
        hidden = tf.nn.relu(x @ w1 + b1)
        loss = tf.reduce_mean(tf.square(hidden @ w2 + b2 - y))
    grads = tape.gradient(loss, [w1, b1, w2, b2])
    if step == 12:
        raise KeyboardInterrupt
    for variable, grad in zip([w1, b1, w2, b2], grads, strict=True):
        variable.assign_sub(0.05 * grad)
