"""tf.numpy_function and tf.py_function inside traced steps: a model called inside the Python
function (the loss made from what it returns), and a reward computed through it from the
model's output. Prints what bare TensorFlow returns (None-ness per variable)."""

import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
states = np.linspace(-1.0, 1.0, 32, dtype="float32").reshape(8, 4)


def play(batch):
    return model(batch).numpy().astype(np.float32)


@tf.function
def inside():
    with tf.GradientTape() as tape:
        logits = tf.numpy_function(play, [states], tf.float32)
        loss = -tf.reduce_mean(tf.nn.log_softmax(logits)[:, 0])
    return tape.gradient(loss, model.trainable_variables)


def reward(values):
    return np.square(values).sum(axis=1).astype(np.float32)


@tf.function
def through():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.numpy_function(reward, [model(states)], tf.float32))
    return tape.gradient(loss, model.trainable_variables)


@tf.function
def inside_py_function():
    with tf.GradientTape() as tape:
        logits = tf.py_function(func=play, inp=[states], Tout=tf.float32)
        loss = tf.reduce_mean(logits)
    return tape.gradient(loss, model.trainable_variables)


for step in (inside, through, inside_py_function):
    print([g is None for g in step()])
