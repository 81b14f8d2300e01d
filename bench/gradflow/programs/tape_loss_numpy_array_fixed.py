# gradflow: fixed
# twin of: tape_loss_numpy_array.py
# change: the error computed on the tensor with TensorFlow ops
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(32, 5)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
weights = np.linspace(0.5, 1.5, 32).astype("float32")[:, None]
model = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)


def weighted_error(y_true, y_pred):
    return tf.reduce_mean(weights * (y_true - y_pred) ** 2)


with tf.GradientTape() as tape:
    loss = weighted_error(y, model(x))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
