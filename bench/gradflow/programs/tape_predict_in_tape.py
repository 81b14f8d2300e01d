# gradflow: buggy
# title: model.predict inside the tape: it returns a numpy array
# source: https://github.com/tensorflow/tensorflow/issues/20630
# shrunk: the eager guide's linear model (predict overridden, then called) to a Dense model on 10
#   synthetic points, one step
# kind: tape
# effect: none
# cause: numpy
# line: 24
# fix: keep-tensorflow-ops
# twin: tape_predict_in_tape_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(10, 2)).astype("float32")
y = x * 3 + 2 + rng.normal(size=(10, 2)).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    error = model.predict(x, verbose=0) - y
    loss_value = tf.reduce_mean(tf.square(error))
grads = tape.gradient(loss_value, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
