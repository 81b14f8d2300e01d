# gradflow: buggy
# title: a DCGAN train step generates the images before the tapes start
# source: https://github.com/tensorflow/docs/pull/1391,
#   https://github.com/tensorflow/tensorflow/issues/31265
# shrunk: the DCGAN tutorial's tf.function train_step (whose with-block indentation the pull request
#   discusses) to Dense generator and discriminator on 8-feature data, one step; the generator
#   call moved above the tapes
# kind: function
# effect: none
# cause: outside-tape
# line: 32
# fix: move-into-tape
# twin: function_gan_images_outside_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

generator = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
discriminator = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)
generator_optimizer = tf.keras.optimizers.Adam(1e-4)
discriminator_optimizer = tf.keras.optimizers.Adam(1e-4)
images = rng.normal(size=(16, 8)).astype("float32")


@tf.function
def train_step(images):
    noise = tf.random.normal([16, 4])
    generated_images = generator(noise, training=True)
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        real_output = discriminator(images, training=True)
        fake_output = discriminator(generated_images, training=True)
        gen_loss = cross_entropy(tf.ones_like(fake_output), fake_output)
        disc_loss = cross_entropy(tf.ones_like(real_output), real_output) + cross_entropy(
            tf.zeros_like(fake_output), fake_output
        )
    gradients_of_generator = gen_tape.gradient(gen_loss, generator.trainable_variables)
    gradients_of_discriminator = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    _truth.record(gradients_of_generator, generator.trainable_variables)
    _truth.record(gradients_of_discriminator, discriminator.trainable_variables)
    generator_optimizer.apply_gradients(zip(gradients_of_generator, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(
        zip(gradients_of_discriminator, discriminator.trainable_variables)
    )


train_step(images)
