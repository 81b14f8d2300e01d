# gradflow: buggy
# title: Keras on JAX: a quantizer wrapped in ops.stop_gradient in a custom JAX training loop
# source: https://github.com/Justin-Tan/generative-compression/issues/27
# shrunk: the compression quantizer (stop_gradient around round) as a Keras layer on the JAX
#   backend, trained by the stateless jax.value_and_grad loop of the Keras guide, 32 samples,
#   one step
# kind: tape
# backend: jax
# effect: zero
# cause: stop-gradient
# line: 29
# fix: straight-through
# twin: jax_quantizer_stop_gradient_fixed.py
import os

os.environ["KERAS_BACKEND"] = "jax"

import jax
import keras
import numpy as np

import _truth

rng = np.random.default_rng(0)


class Quantize(keras.layers.Layer):
    def call(self, z):
        return keras.ops.stop_gradient(keras.ops.round(z))


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
