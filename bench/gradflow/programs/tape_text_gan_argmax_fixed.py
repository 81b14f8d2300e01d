# gradflow: fixed
# twin of: tape_text_gan_argmax.py
# change: the discriminator reads the generator's word probabilities through a Dense embedding
#   (probabilities times the embedding matrix) instead of argmax ids
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

vocab, length = 12, 5
noise = rng.normal(size=(8, length, 4)).astype("float32")
generator = tf.keras.Sequential([
    tf.keras.Input((length, 4)),
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(vocab, activation="softmax"),
])
discriminator = tf.keras.Sequential([
    tf.keras.Input((length, vocab)),
    tf.keras.layers.Dense(8, use_bias=False),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as gen_tape:
    word_probabilities = generator(noise, training=True)
    fake_output = discriminator(word_probabilities, training=True)
    gen_loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(tf.ones_like(fake_output),
                                                                  fake_output))
grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
_truth.record(grads, generator.trainable_variables)
optimizer.apply_gradients(zip(grads, generator.trainable_variables))
