# gradflow: buggy
# title: a custom loss collects float(loss) per sample, then converts the list back to a tensor
# source: https://github.com/tensorflow/tensorflow/issues/30190
# shrunk: the Iris tutorial with a loss measuring how far the per-sample losses are from a normal
#   distribution (a histogram distance in the report) to mean and variance, 32 synthetic
#   samples, one step
# kind: tape
# effect: none
# cause: numpy
# line: 36
# fix: keep-tensorflow-ops
# twin: tape_loss_float_fixed.py
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


def distance_to_normal(samples):
    return np.mean(samples) ** 2 + (np.var(samples) - 1.0) ** 2


def loss(model, x, y):
    y_ = model(x)
    losses = []
    for i in range(y.shape[0]):
        losses.append(float(loss_object(y_true=y[i : i + 1], y_pred=y_[i : i + 1])))
    dis = distance_to_normal(losses)
    return tf.convert_to_tensor(dis, dtype=tf.float32)


def grad(model, inputs, targets):
    with tf.GradientTape() as tape:
        loss_value = loss(model, inputs, targets)
    return loss_value, tape.gradient(loss_value, model.trainable_variables)


loss_value, grads = grad(model, features, labels)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
