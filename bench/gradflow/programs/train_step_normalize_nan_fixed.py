# gradflow: fixed
# twin of: train_step_normalize_nan.py
# change: softmax instead of dividing the ReLU outputs by their sum
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class Classifier(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            scores = self(x, training=True)
            probs = tf.nn.softmax(scores, axis=-1)
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
