# gradflow: fixed
# twin of: tape_loss_float.py
# change: the per-sample losses kept as one tensor (reduction none) and their moments taken with
#   TensorFlow ops
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

features = rng.normal(size=(32, 4)).astype("float32")
labels = rng.integers(0, 3, size=32)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(10, activation="relu"),
                             tf.keras.layers.Dense(3)])
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(0.01)
per_sample = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)


def distance_to_normal(samples):
    return tf.reduce_mean(samples) ** 2 + (tf.math.reduce_variance(samples) - 1.0) ** 2


def loss(model, x, y):
    y_ = model(x)
    losses = per_sample(y, y_)
    return distance_to_normal(losses)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss(model, inputs, targets)
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


loss_value, grads = grad(model, features, labels)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
