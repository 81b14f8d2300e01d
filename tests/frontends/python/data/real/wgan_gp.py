"""keras-io examples/generative/wgan_gp.py: the critic loss with the gradient penalty (a
GradientTape inside the loss) and the generator loss."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

SOURCE = "keras-team/keras-io examples/generative/wgan_gp.py"


def build():
    keras.utils.set_random_seed(24)
    discriminator = keras.Sequential(
        [
            keras.Input((4, 4, 1)),
            layers.Conv2D(2, 3, padding="same"),
            layers.LeakyReLU(0.2),
            layers.Flatten(),
            layers.Dense(1),
        ],
        name="critic",
    )
    generator = keras.Sequential(
        [keras.Input((3,)), layers.Dense(16), layers.LeakyReLU(0.2), layers.Reshape((4, 4, 1))],
        name="gen",
    )
    rng = np.random.default_rng(24)
    real_images = rng.random((2, 4, 4, 1), dtype="float32")
    random_latent_vectors = rng.normal(size=(2, 3)).astype("float32")
    alpha = tf.constant(rng.random((2, 1, 1, 1), dtype="float32"))

    def gradient_penalty(real, fake):
        diff = fake - real
        interpolated = real + alpha * diff
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = discriminator(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1, 2, 3]))
        return tf.reduce_mean((norm - 1.0) ** 2)

    def d_loss():
        fake_images = generator(random_latent_vectors, training=True)
        fake_logits = discriminator(fake_images, training=True)
        real_logits = discriminator(real_images, training=True)
        d_cost = tf.reduce_mean(fake_logits) - tf.reduce_mean(real_logits)
        return d_cost + 10.0 * gradient_penalty(real_images, fake_images)

    def g_loss():
        gen_img_logits = discriminator(
            generator(random_latent_vectors, training=True), training=True
        )
        return -tf.reduce_mean(gen_img_logits)

    return {
        "losses": {"d_loss": d_loss, "g_loss": g_loss},
        "variables": generator.trainable_variables + discriminator.trainable_variables,
    }
