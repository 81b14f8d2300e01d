# gradflow: fixed
# twin of: jax_where_sqrt_nan.py
# change: the report's test_succeed: where first, then sqrt
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)

ops = keras.ops


class RowNorm(keras.layers.Layer):
    def call(self, h):
        squares = ops.sum(h**2, axis=1)
        return ops.sqrt(ops.where(squares > 0.25, squares, ops.ones_like(squares)))


x = rng.normal(size=(16, 6)).astype("float32")
x[12:] = 0.0
y = rng.normal(size=(16,)).astype("float32")
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4), RowNorm()])
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
