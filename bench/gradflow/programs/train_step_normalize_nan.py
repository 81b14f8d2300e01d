# gradflow: buggy
# title: class probabilities normalised by hand: an all-zero ReLU row divides 0 by 0
# source: https://github.com/keras-team/keras/pull/1368
# shrunk: the pull request's output /= output.sum() (NaN for all-zero rows) as a custom train_step
#   over a ReLU output layer, with some all-zero input rows, 16 samples, one epoch
# kind: train_step
# effect: nan
# cause: nan
# line: 25
# fix: divide-no-nan, double-where
# twin: train_step_normalize_nan_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Classifier(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            scores = self(x, training=True)
            probs = scores / tf.reduce_sum(scores, axis=-1, keepdims=True)
            loss = -tf.reduce_mean(tf.reduce_sum(y * tf.math.log(probs + 1e-7), axis=-1))
        grads = tape.gradient(loss, self.trainable_variables)
        _truth.record(grads, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


inputs = tf.keras.Input((5,))
outputs = tf.keras.layers.Dense(3, activation="relu")(inputs)
model = Classifier(inputs, outputs)
model.compile(optimizer="sgd")
x = rng.normal(size=(16, 5)).astype("float32")
x[10:] = 0.0
y = np.eye(3, dtype="float32")[rng.integers(0, 3, size=16)]
model.fit(x, y, epochs=1, batch_size=16, verbose=0)
