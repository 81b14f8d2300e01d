# gradflow: buggy
# title: Keras on JAX: sqrt of a row's squared norm, guarded by where, NaN at a zero row
# source: https://github.com/jax-ml/jax/issues/347
# shrunk: the report's test_fail (sqrt, then where) on embeddings from a Keras Dense layer with zero
#   input rows, trained by a stateless JAX loop, 16 samples, one step
# kind: tape
# backend: jax
# effect: nan
# cause: nan
# line: 30
# fix: double-where
# twin: jax_where_sqrt_nan_fixed.py
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
        norms = ops.sqrt(ops.sum(h**2, axis=1))
        return ops.where(norms > 0.5, norms, ops.ones_like(norms))


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
