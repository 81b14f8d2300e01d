"""keras-io examples/generative/dcgan_overriding_train_step.py: the GAN's train_step losses,
with the generated images detached for the discriminator (a common variant)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

SOURCE = "keras-team/keras-io examples/generative/dcgan_overriding_train_step.py"

latent_dim = 4


def build():
    keras.utils.set_random_seed(5)
    discriminator = keras.Sequential(
        [
            keras.Input(shape=(8, 8, 1)),
            layers.Conv2D(4, (3, 3), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.GlobalMaxPooling2D(),
            layers.Dense(1),
        ],
        name="discriminator",
    )
    generator = keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            layers.Dense(4 * 4 * 2),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Reshape((4, 4, 2)),
            layers.Conv2DTranspose(2, (4, 4), strides=(2, 2), padding="same"),
            layers.LeakyReLU(negative_slope=0.2),
            layers.Conv2D(1, (3, 3), padding="same", activation="sigmoid"),
        ],
        name="generator",
    )
    loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)
    real_images = np.random.default_rng(5).random((2, 8, 8, 1), dtype="float32")
    random_latent_vectors = np.random.default_rng(6).normal(size=(2, latent_dim)).astype("float32")

    def d_loss():
        generated_images = tf.stop_gradient(generator(random_latent_vectors))
        combined_images = tf.concat([generated_images, real_images], axis=0)
        labels = tf.concat([tf.ones((2, 1)), tf.zeros((2, 1))], axis=0)
        return loss_fn(labels, discriminator(combined_images))

    def g_loss():
        misleading_labels = tf.zeros((2, 1))
        predictions = discriminator(generator(random_latent_vectors))
        return loss_fn(misleading_labels, predictions)

    return {
        "losses": {"d_loss": d_loss, "g_loss": g_loss},
        "variables": generator.trainable_variables + discriminator.trainable_variables,
    }
