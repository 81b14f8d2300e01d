# gradflow: buggy
# title: a saliency map: the gradient of the score with respect to the input, never watched
# source: https://github.com/tensorflow/tensorflow/issues/31264,
#   https://github.com/tensorflow/tensorflow/issues/56968
# shrunk: VGG19 on an image to a two-layer classifier on 4 synthetic 8-feature inputs; the score is
#   the top class's logit
# kind: tape
# effect: none
# cause: unwatched
# line: 23
# fix: watch
# twin: tape_saliency_unwatched_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(3)])
images = tf.convert_to_tensor(rng.normal(size=(4, 8)).astype("float32"))
with tf.GradientTape() as tape:
    predictions = model(images)
    score = tf.reduce_max(predictions, axis=1)
saliency = tape.gradient(score, images)
_truth.record([saliency], [images])
print(tf.reduce_max(tf.abs(saliency), axis=1))
