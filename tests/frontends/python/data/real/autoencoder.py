"""tensorflow/docs tutorials/generative/autoencoder.ipynb: the subclassed Autoencoder."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers
from tensorflow.keras.models import Model

SOURCE = "tensorflow/docs tutorials/generative/autoencoder.ipynb"


class Autoencoder(Model):
    def __init__(self, latent_dim, shape):
        super().__init__()
        self.latent_dim = latent_dim
        self.shape = shape
        self.encoder = tf.keras.Sequential(
            [layers.Flatten(), layers.Dense(latent_dim, activation="relu")]
        )
        self.decoder = tf.keras.Sequential(
            [layers.Dense(int(np.prod(shape)), activation="sigmoid"), layers.Reshape(shape)]
        )

    def call(self, x):
        encoded = self.encoder(x)
        return self.decoder(encoded)


def build():
    tf.keras.utils.set_random_seed(11)
    x = np.random.default_rng(11).random((4, 5, 5), dtype="float32")
    autoencoder = Autoencoder(3, (5, 5))
    autoencoder(x)
    mse = tf.keras.losses.MeanSquaredError()
    return {
        "losses": {"mse": lambda: mse(x, autoencoder(x))},
        "variables": autoencoder.trainable_variables,
    }
