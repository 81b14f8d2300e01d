# gradflow: fixed
# twin of: train_step_numpy_function_reward.py
# change: the reward computed with TensorFlow ops
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
            loss = tf.reduce_mean(tf.abs(y_pred - y))
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
