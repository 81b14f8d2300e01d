# gradflow: buggy
# title: a hand-written binary cross-entropy: log(1 - p) of a saturated sigmoid
# source: https://github.com/maxvfischer/keras-image-segmentation-loss-functions/pull/1,
#   https://github.com/keras-team/keras/issues/377
# shrunk: a segmentation loss's log(y_pred) to a one-layer sigmoid classifier whose large weights
#   saturate some outputs to exactly 1.0 in float32, 32 samples, one step
# kind: tape
# effect: nan
# cause: nan
# line: 30
# fix: safe-log
# twin: tape_manual_bce_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = (10 * rng.normal(size=(32, 4))).astype("float32")
y = rng.integers(0, 2, size=(32, 1)).astype("float32")
big = tf.keras.initializers.Constant(5.0)
model = tf.keras.Sequential([
    tf.keras.Input((4,)),
    tf.keras.layers.Dense(1, activation="sigmoid", kernel_initializer=big),
])
optimizer = tf.keras.optimizers.SGD(0.01)
with tf.GradientTape() as tape:
    p = model(x)
    loss = -tf.reduce_mean(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))
grads = tape.gradient(loss, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
