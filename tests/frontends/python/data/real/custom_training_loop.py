"""keras-io guides/writing_a_custom_training_loop_in_tensorflow.py: the MNIST MLP, with the
activity-regularization layer the guide adds (its loss appears in model.losses)."""

import keras
import numpy as np
import tensorflow as tf

SOURCE = "keras-team/keras-io guides/writing_a_custom_training_loop_in_tensorflow.py"


class ActivityRegularizationLayer(keras.layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * tf.reduce_sum(inputs))
        return inputs


def build():
    keras.utils.set_random_seed(6)
    inputs = keras.Input(shape=(16,), name="digits")
    x1 = keras.layers.Dense(8, activation="relu")(inputs)
    x1 = ActivityRegularizationLayer()(x1)
    x2 = keras.layers.Dense(8, activation="relu")(x1)
    outputs = keras.layers.Dense(10, name="predictions")(x2)
    model = keras.Model(inputs=inputs, outputs=outputs)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x = np.random.default_rng(6).random((4, 16), dtype="float32")
    y = np.array([1, 2, 3, 4])

    def loss_value():
        logits = model(x, training=True)
        return loss_fn(y, logits) + sum(model.losses)

    return {"losses": {"loss": loss_value}, "variables": model.trainable_weights}
