# gradflow: fixed
# twin of: tape_saliency_unwatched.py
# change: tape.watch(images) as the tape's first statement
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(3)])
images = tf.convert_to_tensor(rng.normal(size=(4, 8)).astype("float32"))
with tf.GradientTape() as tape:
    tape.watch(images)
    predictions = model(images)
    score = tf.reduce_max(predictions, axis=1)
saliency = tape.gradient(score, images)
_truth.record([saliency], [images])
print(tf.reduce_max(tf.abs(saliency), axis=1))
