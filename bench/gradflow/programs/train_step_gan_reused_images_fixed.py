# gradflow: fixed
# twin of: train_step_gan_reused_images.py
# change: the generator step makes its own images inside its tape
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class GAN(tf.keras.Model):
    def __init__(self, generator, discriminator):
        super().__init__()
        self.generator = generator
        self.discriminator = discriminator
        self.loss_fn = tf.keras.losses.BinaryCrossentropy(from_logits=True)

    def compile(self, d_optimizer, g_optimizer):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer

    def train_step(self, real):
        noise = tf.random.normal([tf.shape(real)[0], 4])
        generated = self.generator(noise)
        with tf.GradientTape() as tape:
            real_out = self.discriminator(real)
            fake_out = self.discriminator(generated)
            d_loss = self.loss_fn(tf.ones_like(real_out), real_out) + self.loss_fn(
                tf.zeros_like(fake_out), fake_out
            )
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(noise))
            g_loss = self.loss_fn(tf.ones_like(predictions), predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        _truth.record(grads, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        return {"d_loss": d_loss, "g_loss": g_loss}


generator = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
discriminator = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
gan = GAN(generator, discriminator)
gan.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.optimizers.Adam(1e-3))
gan.fit(rng.normal(size=(16, 8)).astype("float32"), epochs=1, batch_size=16, verbose=0)
