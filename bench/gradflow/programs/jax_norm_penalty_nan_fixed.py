# gradflow: fixed
# twin of: jax_norm_penalty_nan.py
# change: the penalty as sum(w ** 2), as the reports conclude
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)

x = rng.normal(size=(16, 6)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)])
mse = keras.losses.MeanSquaredError()


def penalty(weights):
    return sum(keras.ops.sum(w**2) for w in weights)


optimizer = keras.optimizers.Adam(1e-2)
optimizer.build(model.trainable_variables)


def compute_loss(trainable_variables, non_trainable_variables, x, y):
    y_pred, non_trainable_variables = model.stateless_call(
        trainable_variables, non_trainable_variables, x, training=True
    )
    return mse(y, y_pred) + 1e-3 * penalty(trainable_variables), non_trainable_variables


grad_fn = jax.value_and_grad(compute_loss, has_aux=True)
trainable = [v.value for v in model.trainable_variables]
non_trainable = [v.value for v in model.non_trainable_variables]
(loss, non_trainable), grads = grad_fn(trainable, non_trainable, x, y)
_truth.record_jax(grads, [v.path for v in model.trainable_variables])
trainable, _ = optimizer.stateless_apply([v.value for v in optimizer.variables], grads, trainable)
