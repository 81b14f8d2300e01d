"""tensorflow/docs tutorials/generative/pix2pix.ipynb: generator loss (GAN + LAMBDA * L1) and
discriminator loss on (input, target) pairs."""

import numpy as np
import tensorflow as tf

SOURCE = "tensorflow/docs tutorials/generative/pix2pix.ipynb"
LAMBDA = 100
loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def generator_loss(disc_generated_output, gen_output, target):
    gan_loss = loss_object(tf.ones_like(disc_generated_output), disc_generated_output)
    l1_loss = tf.reduce_mean(tf.abs(target - gen_output))
    return gan_loss + (LAMBDA * l1_loss)


def discriminator_loss(disc_real_output, disc_generated_output):
    real_loss = loss_object(tf.ones_like(disc_real_output), disc_real_output)
    generated_loss = loss_object(tf.zeros_like(disc_generated_output), disc_generated_output)
    return real_loss + generated_loss


def build():
    tf.keras.utils.set_random_seed(25)
    inp = tf.keras.layers.Input(shape=[8, 8, 3])
    x = tf.keras.layers.Conv2D(4, 3, strides=2, padding="same")(inp)
    x = tf.keras.layers.Conv2DTranspose(3, 3, strides=2, padding="same", activation="tanh")(x)
    generator = tf.keras.Model(inputs=inp, outputs=x, name="generator")
    a = tf.keras.layers.Input(shape=[8, 8, 3], name="input_image")
    b = tf.keras.layers.Input(shape=[8, 8, 3], name="target_image")
    y = tf.keras.layers.concatenate([a, b])
    y = tf.keras.layers.Conv2D(1, 4, strides=2, padding="same")(y)
    discriminator = tf.keras.Model(inputs=[a, b], outputs=y, name="discriminator")
    rng = np.random.default_rng(25)
    input_image = tf.constant(rng.random((1, 8, 8, 3), dtype="float32"))
    target = tf.constant(rng.random((1, 8, 8, 3), dtype="float32"))

    def gen_total_loss():
        gen_output = generator(input_image, training=True)
        disc_generated_output = discriminator([input_image, gen_output], training=True)
        return generator_loss(disc_generated_output, gen_output, target)

    def disc_loss():
        gen_output = generator(input_image, training=True)
        disc_real_output = discriminator([input_image, target], training=True)
        disc_generated_output = discriminator([input_image, gen_output], training=True)
        return discriminator_loss(disc_real_output, disc_generated_output)

    return {
        "losses": {"gen_total": gen_total_loss, "disc": disc_loss},
        "variables": generator.trainable_variables + discriminator.trainable_variables,
    }
