"""tensorflow/docs tutorials/generative/dcgan.ipynb: generator and discriminator losses."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

SOURCE = "tensorflow/docs tutorials/generative/dcgan.ipynb"


def make_generator_model():
    model = tf.keras.Sequential(name="generator")
    model.add(layers.Input((8,)))
    model.add(layers.Dense(4 * 4 * 4, use_bias=False))
    model.add(layers.BatchNormalization())
    model.add(layers.LeakyReLU())
    model.add(layers.Reshape((4, 4, 4)))
    model.add(layers.Conv2DTranspose(1, (3, 3), strides=(2, 2), padding="same", use_bias=False))
    return model


def make_discriminator_model():
    model = tf.keras.Sequential(name="discriminator")
    model.add(layers.Input((8, 8, 1)))
    model.add(layers.Conv2D(4, (3, 3), strides=(2, 2), padding="same"))
    model.add(layers.LeakyReLU())
    model.add(layers.Flatten())
    model.add(layers.Dense(1))
    return model


cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def discriminator_loss(real_output, fake_output):
    real_loss = cross_entropy(tf.ones_like(real_output), real_output)
    fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
    return real_loss + fake_loss


def generator_loss(fake_output):
    return cross_entropy(tf.ones_like(fake_output), fake_output)


def build():
    tf.keras.utils.set_random_seed(3)
    generator = make_generator_model()
    discriminator = make_discriminator_model()
    noise = np.random.default_rng(3).normal(size=(4, 8)).astype("float32")
    images = np.random.default_rng(4).random((4, 8, 8, 1), dtype="float32")

    def gen_loss():
        generated_images = generator(noise, training=True)
        return generator_loss(discriminator(generated_images, training=True))

    def disc_loss():
        generated_images = generator(noise, training=True)
        real_output = discriminator(images, training=True)
        fake_output = discriminator(generated_images, training=True)
        return discriminator_loss(real_output, fake_output)

    return {
        "losses": {"gen": gen_loss, "disc": disc_loss},
        "variables": generator.trainable_variables + discriminator.trainable_variables,
    }
