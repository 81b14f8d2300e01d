# gradflow: buggy
# title: Keras on JAX: an L2 penalty written as norm(w) ** 2 includes a bias that starts at zero
# source: https://github.com/jax-ml/jax/issues/4177, https://github.com/jax-ml/jax/issues/21723
# shrunk: the reports' grad of norm(x) ** 2 at zero (NaN, where sum(x ** 2) is fine) as a weight
#   penalty over every trainable variable of a Keras Dense model on the JAX backend, stateless
#   loop, 16 samples, one step
# kind: tape
# backend: jax
# effect: nan
# cause: nan
# line: 33
# fix: double-where
# twin: jax_norm_penalty_nan_fixed.py
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
    return sum(keras.ops.norm(keras.ops.reshape(w, [-1])) ** 2 for w in weights)


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
