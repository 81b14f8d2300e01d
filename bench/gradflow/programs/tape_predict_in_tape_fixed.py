# gradflow: fixed
# twin of: tape_predict_in_tape.py
# change: model(x) instead of model.predict(x)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(10, 2)).astype("float32")
y = x * 3 + 2 + rng.normal(size=(10, 2)).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    error = model(x) - y
    loss_value = tf.reduce_mean(tf.square(error))
grads = tape.gradient(loss_value, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
