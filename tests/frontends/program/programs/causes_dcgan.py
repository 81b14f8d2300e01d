"""TensorFlow's DCGAN tutorial pattern: two tapes opened in one with, asked one after the
other; the discriminator's loss reads the generator's output through stop_gradient."""

import tensorflow as tf

generator = tf.keras.Sequential(
    [tf.keras.Input((3,)), tf.keras.layers.Dense(4, name="g1")], name="generator"
)
discriminator = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(1, name="d1")], name="discriminator"
)
noise = tf.random.stateless_normal((2, 3), seed=(1, 2))
real = tf.random.stateless_normal((2, 4), seed=(3, 4))


def step():
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        fake_out = discriminator(fake, training=True)
        gen_loss = tf.reduce_sum(tf.nn.softplus(-fake_out))
        frozen = discriminator(tf.stop_gradient(fake), training=True)
        disc_loss = tf.reduce_sum(tf.nn.softplus(-discriminator(real))) + tf.reduce_sum(frozen)
    g = gen_tape.gradient(gen_loss, generator.trainable_variables)
    d = disc_tape.gradient(
        disc_loss, discriminator.trainable_variables + generator.trainable_variables
    )
    return g, d


eager = step()
traced = tf.function(step)()
for g, d in (eager, traced):
    print([[x is None for x in g], [x is None for x in d]])
