# gradflow: buggy
# title: a custom train_step scores the predictions with a numpy reward through numpy_function
# source: https://github.com/tensorflow/tensorflow/issues/47288
# shrunk: the report's numpy step wrapped in tf.numpy_function inside the loss, as a Keras
#   train_step whose loss is a numpy reward of the predictions, 16 samples, one epoch
# kind: train_step
# effect: none
# cause: numpy
# line: 29
# fix: keep-tensorflow-ops, no-gradient-op
# twin: train_step_numpy_function_reward_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def np_reward(predictions, targets):
    return np.float32(np.mean(np.abs(predictions - targets)))


class Scored(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = tf.numpy_function(np_reward, [y_pred, y], tf.float32)
        grads = tape.gradient(loss, self.trainable_variables)
        _truth.record(grads, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


inputs = tf.keras.Input((4,))
model = Scored(inputs, tf.keras.layers.Dense(1)(inputs))
model.compile(optimizer="sgd")
x = rng.normal(size=(16, 4)).astype("float32")
y = rng.normal(size=(16, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=16, verbose=0)
