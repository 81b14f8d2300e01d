# gradflow: fixed
# twin of: train_step_forward_outside_tape.py
# change: y_pred = self(x, training=True) inside the tape
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        _truth.record(gradients, trainable_vars)
        self.optimizer.apply_gradients(zip(gradients, trainable_vars))
        return {"loss": loss}


inputs = tf.keras.Input((6,))
outputs = tf.keras.layers.Dense(1)(tf.keras.layers.Dense(8, activation="relu")(inputs))
model = CustomModel(inputs, outputs)
model.compile(optimizer="adam", loss="mse")
x = rng.normal(size=(32, 6)).astype("float32")
y = rng.normal(size=(32, 1)).astype("float32")
model.fit(x, y, epochs=1, batch_size=32, verbose=0)
