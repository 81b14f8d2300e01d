# gradflow: buggy
# title: fine-tuning: the base is unfrozen after compile() and fit() runs without compiling again
# source: https://github.com/jacobgil/keras-dcgan/issues/19,
#   https://github.com/keras-team/keras/issues/6405
# shrunk: the reports' trainable flag changed after compile (a GAN's discriminator, a base model) to
#   the usual two-phase fine-tuning of a one-layer base under a head, 32 samples, one epoch
#   per phase
# kind: fit
# effect: untrained
# cause: trainable-changed
# line: 29
# fix: compile-again
# twin: fit_unfreeze_without_compile_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

base = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu")])
model = tf.keras.Sequential([base, tf.keras.layers.Dense(1)])
x = rng.normal(size=(32, 4)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
base.trainable = False
model.compile(optimizer="adam", loss="mse")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)

base.trainable = True
_truth.keras_fit(model)
_truth.snapshot(base.trainable_variables)
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
_truth.moved()
