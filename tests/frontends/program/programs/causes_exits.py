"""Other ways a value leaves TensorFlow inside a tape, each followed by its way back."""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3, name="head")])
x = np.random.RandomState(1).rand(5, 4).astype("float32")
w = tf.Variable([1.0, 2.0], name="w")
results = []
with tf.GradientTape() as tape:
    out = model.predict(x, verbose=0)  # predict hands back numpy
    loss = tf.reduce_mean(tf.square(out))
results.append(tape.gradient(loss, model.trainable_variables))
with tf.GradientTape() as tape:
    parts = [v for v in (w * 3.0).numpy()]  # .numpy(), then Python's sum
    loss = tf.convert_to_tensor(sum(parts))
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    arr = np.asarray(w * 2.0)  # the buffer protocol: no Python method runs
    loss = tf.reduce_sum(tf.constant(arr) * 2.0)
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    n = int(tf.reduce_sum(w * 2.0))  # int()
    loss = tf.cast(n, tf.float32) * tf.constant(1.0)
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    m = np.array(model(x))  # a model's output, through the buffer protocol
    loss = tf.reduce_sum(tf.convert_to_tensor(m))
results.append(tape.gradient(loss, model.trainable_variables))
with tf.GradientTape() as tape:
    y = tf.numpy_function(np.tanh, [w * 2.0], tf.float32)  # numpy inside TensorFlow
    loss = tf.reduce_sum(y)
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    listed = (w * 4.0).numpy().tolist()  # .tolist() of the numpy value
    loss = tf.reduce_sum(tf.constant(listed))
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    t = np.tanh(model(x))  # a numpy ufunc on a model's output
    loss = tf.reduce_sum(tf.convert_to_tensor(t))
results.append(tape.gradient(loss, model.trainable_variables))
with tf.GradientTape() as tape:
    t = np.mean(w * 2.0)  # a numpy function on a tensor
    loss = tf.convert_to_tensor(t) * 1.0
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    h = w * 2.0
    t = np.exp(h) + 1.0  # a ufunc on a line of its own
    loss = tf.reduce_sum(tf.constant(t))
results.append(tape.gradient(loss, [w]))
with tf.GradientTape() as tape:
    t = np.ones(2, np.float32) * (w * 2.0)  # an operator: TensorFlow computes it, no exit
    loss = tf.reduce_sum(t)
results.append(tape.gradient(loss, [w]))
print([[g is None for g in r] for r in results])
