"""The Keras 2 GAN idiom under Keras 3: the discriminator is compiled trainable, then frozen
for the combined model, and trained on its own with train_on_batch."""

import numpy as np
import tensorflow as tf
from parts import seeded

disc = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1, name="d1")], name="disc")
disc = seeded(disc, 2)
disc.compile(optimizer="sgd", loss="mse")
gen = seeded(tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3, name="g1")]), 1)
disc.trainable = False  # for the combined model only, as Keras 2 tutorials do
noise = tf.keras.Input((4,))
gan = tf.keras.Model(noise, disc(gen(noise)))
gan.compile(optimizer="sgd", loss="mse")

rng = np.random.default_rng(3)
real = rng.normal(size=(8, 3)).astype("float32")
z = rng.normal(size=(8, 4)).astype("float32")
labels = np.concatenate([np.ones((8, 1)), np.zeros((8, 1))]).astype("float32")
before = disc.get_weights()
for _ in range(2):
    disc.train_on_batch(np.concatenate([real, gen(z).numpy()]), labels)
    gan.train_on_batch(z, np.ones((8, 1), "float32"))
after = disc.get_weights()
print(
    "discriminator trained", any(bool(np.any(a != b)) for a, b in zip(before, after, strict=True))
)
