"""keras-io examples/generative/vae.py: the Sampling layer, reconstruction and KL losses."""

import keras
import numpy as np
from keras import layers, ops

SOURCE = "keras-team/keras-io examples/generative/vae.py"
RANDOM = True  # the Sampling layer draws new noise on every call: compare None-ness only


class Sampling(layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = keras.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = keras.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


def build():
    keras.utils.set_random_seed(13)
    latent_dim = 2
    encoder_inputs = keras.Input(shape=(6, 6, 1))
    x = layers.Conv2D(4, 3, activation="relu", strides=2, padding="same")(encoder_inputs)
    x = layers.Flatten()(x)
    x = layers.Dense(8, activation="relu")(x)
    z_mean = layers.Dense(latent_dim, name="z_mean")(x)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(x)
    z = Sampling()([z_mean, z_log_var])
    encoder = keras.Model(encoder_inputs, [z_mean, z_log_var, z], name="encoder")
    latent_inputs = keras.Input(shape=(latent_dim,))
    x = layers.Dense(3 * 3 * 4, activation="relu")(latent_inputs)
    x = layers.Reshape((3, 3, 4))(x)
    decoder_outputs = layers.Conv2DTranspose(1, 3, activation="sigmoid", strides=2, padding="same")(
        x
    )
    decoder = keras.Model(latent_inputs, decoder_outputs, name="decoder")
    data = np.random.default_rng(13).random((4, 6, 6, 1), dtype="float32")

    def reconstruction_loss():
        _, _, z = encoder(data)
        reconstruction = decoder(z)
        return ops.mean(
            ops.sum(keras.losses.binary_crossentropy(data, reconstruction), axis=(1, 2))
        )

    def kl_loss():
        z_mean, z_log_var, _ = encoder(data)
        kl = -0.5 * (1 + z_log_var - ops.square(z_mean) - ops.exp(z_log_var))
        return ops.mean(ops.sum(kl, axis=1))

    return {
        "losses": {"reconstruction": reconstruction_loss, "kl": kl_loss},
        "variables": encoder.trainable_weights + decoder.trainable_weights,
    }
