"""Gradients of a two-output model whose loss reads output "a" only: in a custom
train_step under fit(), in a plain loop, and a subclassed model with a layer call() skips."""

import tensorflow as tf
from parts import two_heads


class OwnStep(tf.keras.Model):
    """A functional model that trains with its own train_step."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            pred = self(x, training=True)
            loss = tf.reduce_mean(tf.square(y["a"] - pred["a"]))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        return {"loss": loss}


model, x, y = two_heads(OwnStep)
model.compile(optimizer="sgd")
model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)

plain, _, _ = two_heads()
with tf.GradientTape() as tape:
    pred = plain(x[:8])
    loss = tf.reduce_mean(tf.square(y["a"][:8] - pred["a"]))
grads = tape.gradient(loss, plain.trainable_variables)
print("plain loss", float(loss))


class WithSpare(tf.keras.Model):
    """A subclassed model with a layer its call() never uses, and its own train_step."""

    def __init__(self):
        super().__init__()
        self.used = tf.keras.layers.Dense(1, name="used")
        self.spare = tf.keras.layers.Dense(1, name="spare")

    def call(self, inputs):
        return self.used(inputs)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(y - self(x, training=True)))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables, strict=True))
        return {"loss": loss}


spare_model = WithSpare()
spare_model.spare.build((None, 4))
spare_model.compile(optimizer="sgd")
spare_model.fit(x, y["a"], batch_size=8, epochs=1, verbose=0)
