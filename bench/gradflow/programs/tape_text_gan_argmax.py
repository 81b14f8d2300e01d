# gradflow: buggy
# title: a text GAN feeds argmax token ids from the generator to the discriminator's Embedding
# source: https://github.com/keras-team/keras/issues/17444,
#   https://github.com/dbpedia/RDF2text-GAN/issues/1
# shrunk: the report's LSTM generator and Bidirectional-LSTM discriminator to Dense layers over a
#   12-word vocabulary, 8 sequences of 5 tokens, one generator step
# kind: tape
# effect: none
# cause: nondifferentiable
# line: 36
# fix: soft-argmax, differentiable-op
# twin: tape_text_gan_argmax_fixed.py
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
    tf.keras.Input((length,)),
    tf.keras.layers.Embedding(vocab, 8),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
optimizer = tf.keras.optimizers.Adam(0.01)
with tf.GradientTape() as gen_tape:
    word_probabilities = generator(noise, training=True)
    tokens = tf.argmax(word_probabilities, axis=-1)
    fake_output = discriminator(tokens, training=True)
    gen_loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(tf.ones_like(fake_output),
                                                                  fake_output))
grads = gen_tape.gradient(gen_loss, generator.trainable_variables)
_truth.record(grads, generator.trainable_variables)
optimizer.apply_gradients(zip(grads, generator.trainable_variables))
