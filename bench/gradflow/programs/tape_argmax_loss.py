# gradflow: buggy
# title: a regression loss on the predicted class index (argmax)
# source: https://github.com/keras-team/keras/issues/11157,
#   https://github.com/tensorflow/tensorflow/issues/14931
# shrunk: a classifier whose loss compares argmax(logits) with the labels, 32 samples of 6 features,
#   one step
# kind: tape
# effect: none
# cause: nondifferentiable
# line: 27
# fix: soft-argmax, differentiable-op, no-gradient-op
# twin: tape_argmax_loss_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=32).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(4)])
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as tape:
    logits = model(x)
    predicted = tf.cast(tf.argmax(logits, axis=-1), tf.float32)
    loss = tf.reduce_mean(tf.square(y - predicted))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
