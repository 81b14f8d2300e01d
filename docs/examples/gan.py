"""A GAN training step with a classic bug: the generator runs outside its tape."""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
generator = tf.keras.Sequential(
    [tf.keras.Input((4,)), tf.keras.layers.Dense(3, name="g")], name="generator"
)
discriminator = tf.keras.Sequential(
    [tf.keras.Input((3,)), tf.keras.layers.Dense(1, name="d")], name="discriminator"
)
for model in (generator, discriminator):
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
real = rng.normal(size=(16, 3)).astype("float32")
g_opt, d_opt = tf.keras.optimizers.SGD(0.01), tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(noise):
    fake = generator(noise)  # the bug: computed before the tapes start
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        g_loss = tf.reduce_mean(tf.nn.softplus(-discriminator(fake)))
        d_loss = tf.reduce_mean(tf.nn.softplus(-discriminator(real)))
        d_loss += tf.reduce_mean(tf.nn.softplus(discriminator(fake)))
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
    return g_grads


for step in range(3):
    g_grads = train_step(rng.normal(size=(16, 4)).astype("float32"))
print("generator gradients:", g_grads)
