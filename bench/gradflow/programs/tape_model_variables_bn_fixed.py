# gradflow: fixed
# twin of: tape_model_variables_bn.py
# change: model.trainable_variables instead of model.variables
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
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
