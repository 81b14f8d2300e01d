# gradflow: buggy
# title: gradients asked for model.variables: BatchNormalization's moving statistics have none
# source: https://github.com/tensorflow/tensorflow/issues/26404,
#   https://github.com/tensorlayer/SRGAN/issues/210
# shrunk: the eager ResNet50 example to Dense, BatchNormalization, Dense on 32 synthetic samples,
#   one step
# kind: tape
# effect: none
# cause: non-trainable
# line: 33
# fix: var-list
# twin: tape_model_variables_bn_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 8)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model = tf.keras.Sequential([
    tf.keras.Input((8,)),
    tf.keras.layers.Dense(16),
    tf.keras.layers.BatchNormalization(),
    tf.keras.layers.ReLU(),
    tf.keras.layers.Dense(1),
])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    prediction = model(x, training=True)
    loss = tf.reduce_mean(tf.square(prediction - y))
grads = tape.gradient(loss, model.variables)
_truth.record(grads, model.variables)
optimizer.apply_gradients(zip(grads, model.variables))
