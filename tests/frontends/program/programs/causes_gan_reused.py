"""A GAN step that reuses, for the generator's tape, the images it made for the
discriminator's step (before either tape): the discriminator's optimizer writes between
them. Prints what bare TensorFlow returns for the generator (None-ness)."""

import tensorflow as tf

generator = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(6)])
discriminator = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(1)])
d_optimizer = tf.keras.optimizers.SGD(0.1)


@tf.function
def step(noise, real):
    generated = generator(noise)
    with tf.GradientTape() as tape:
        d_loss = tf.reduce_mean(discriminator(generated)) - tf.reduce_mean(discriminator(real))
    grads = tape.gradient(d_loss, discriminator.trainable_variables)
    d_optimizer.apply_gradients(zip(grads, discriminator.trainable_variables, strict=True))
    with tf.GradientTape() as tape:
        g_loss = -tf.reduce_mean(discriminator(generated))
    return tape.gradient(g_loss, generator.trainable_variables)


print([g is None for g in step(tf.ones((8, 4)), tf.ones((8, 6)))])
