"""A saliency map and a gradient penalty in tf.function; a NaN and a dead ReLU eagerly."""

import numpy as np
import tensorflow as tf
from parts import seeded

model = seeded(tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2, name="d")]), 9)
images = tf.constant(np.random.default_rng(10).normal(size=(4, 3)), tf.float32)


@tf.function
def saliency(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        score = tf.reduce_max(model(x), axis=1)
    return tape.gradient(score, x)


@tf.function
def penalty(x):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = model(x)
        slopes = inner.gradient(y, x)
        gp = tf.reduce_mean(tf.square(tf.norm(slopes, axis=1) - 1.0))
    return outer.gradient(gp, model.trainable_variables)


print(saliency(images).shape, [g is None for g in penalty(images)])

w = tf.Variable([1.0, 2.0], name="w")
dead = tf.Variable([1.0, 2.0], name="dead")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(tf.sqrt(w - w)) + tf.reduce_sum(tf.nn.relu(-dead))
print([g.numpy() for g in tape.gradient(loss, [w, dead])])
