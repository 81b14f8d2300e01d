"""tensorflow/docs tutorials/quickstart/advanced.ipynb: a subclassed MyModel, one train step."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import Model
from tensorflow.keras.layers import Conv2D, Dense, Flatten

SOURCE = "tensorflow/docs tutorials/quickstart/advanced.ipynb"


class MyModel(Model):
    def __init__(self):
        super().__init__()
        self.conv1 = Conv2D(4, 3, activation="relu")
        self.flatten = Flatten()
        self.d1 = Dense(8, activation="relu")
        self.d2 = Dense(10)

    def call(self, x):
        x = self.conv1(x)
        x = self.flatten(x)
        x = self.d1(x)
        return self.d2(x)


def build():
    tf.keras.utils.set_random_seed(2)
    model = MyModel()
    images = np.random.default_rng(2).random((3, 6, 6, 1), dtype="float32")
    labels = np.array([1, 2, 3])
    model(images)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step_loss():
        predictions = model(images, training=True)
        return loss_object(labels, predictions)

    return {"losses": {"loss": train_step_loss}, "variables": model.trainable_variables}
