# gradflow: fixed
# twin of: jax_quantizer_stop_gradient.py
# change: the straight-through estimator z + stop_gradient(round(z) - z)
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)


class Quantize(keras.layers.Layer):
    def call(self, z):
        return z + keras.ops.stop_gradient(keras.ops.round(z) - z)


x = rng.normal(size=(32, 8)).astype("float32")
y = x
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, name="encoder"), Quantize(),
                          keras.layers.Dense(8, name="decoder")])
loss_fn = keras.losses.MeanSquaredError()

optimizer = keras.optimizers.Adam(1e-2)
optimizer.build(model.trainable_variables)


def compute_loss(trainable_variables, non_trainable_variables, x, y):
    y_pred, non_trainable_variables = model.stateless_call(
        trainable_variables, non_trainable_variables, x, training=True
    )
    return loss_fn(y, y_pred), non_trainable_variables


grad_fn = jax.value_and_grad(compute_loss, has_aux=True)
trainable = [v.value for v in model.trainable_variables]
non_trainable = [v.value for v in model.non_trainable_variables]
(loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, y)
_truth.record_jax(grads, [v.path for v in model.trainable_variables])
trainable, _ = optimizer.stateless_apply([v.value for v in optimizer.variables], grads, trainable)
