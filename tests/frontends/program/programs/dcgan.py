"""A DCGAN-style loop with two tapes; the generator is called outside its tape (a bug)."""

import tensorflow as tf
from parts import gan

generator, discriminator, real, noises = gan()
g_opt = tf.keras.optimizers.SGD(0.01)
d_opt = tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(noise):
    fake = generator(noise, training=True)  # outside both tapes
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        real_out = discriminator(real, training=True)
        fake_out = discriminator(fake, training=True)
        gen_loss = tf.reduce_mean(tf.nn.softplus(-fake_out))
        disc_loss = tf.reduce_mean(tf.nn.softplus(-real_out)) + tf.reduce_mean(
            tf.nn.softplus(fake_out)
        )
    g_grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
    d_grads = disc_tape.gradient(disc_loss, discriminator.trainable_variables)
    g_pairs = [
        (g, v) for g, v in zip(g_grads, generator.trainable_variables, strict=True) if g is not None
    ]
    if g_pairs:
        g_opt.apply_gradients(g_pairs)
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables, strict=True))
    return gen_loss, disc_loss


for epoch in range(3):
    gl, dl = train_step(noises[epoch])
    print(f"epoch {epoch}: gen {float(gl):.6f} disc {float(dl):.6f}")
