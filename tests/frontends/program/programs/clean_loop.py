"""A clean eager training loop: every variable gets a gradient."""

import tensorflow as tf
from parts import regression

x, y, w0, b0 = regression()
w = tf.Variable(w0, name="w")
b = tf.Variable(b0, name="b")
opt = tf.keras.optimizers.SGD(0.1)
for step in range(5):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w + b - y))
    grads = tape.gradient(loss, [w, b])
    opt.apply_gradients(zip(grads, [w, b], strict=True))
    print(f"step {step}: loss {float(loss):.6f}")
