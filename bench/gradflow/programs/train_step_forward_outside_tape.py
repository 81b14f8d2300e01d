# gradflow: buggy
# title: a custom train_step runs the forward pass before opening its tape
# source: https://github.com/keras-team/keras/issues/14104,
#   https://github.com/keras-team/keras-io/issues/406
# shrunk: the customizing-fit train_step quoted in the first report with the forward pass moved
#   above the tape, as the second report did in a custom loop; 32 samples, one epoch
# kind: train_step
# effect: none
# cause: outside-tape
# line: 24
# fix: move-into-tape
# twin: train_step_forward_outside_tape_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class CustomModel(tf.keras.Model):
    def train_step(self, data):
        x, y = data
        y_pred = self(x, training=True)
        with tf.GradientTape() as tape:
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
