"""Integer variables handed to gradient calls: an eager tape, a tf.function, a Keras layer's
int32 counter under fit(). Prints what bare TensorFlow returns (None-ness per source)."""

import numpy as np
import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
steps = tf.Variable(3, name="steps")  # an int32 step counter, trainable by default

with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * tf.cast(steps, tf.float32))
print([g is None for g in tape.gradient(loss, [w, steps])])


@tf.function
def traced():
    with tf.GradientTape() as t:
        scaled = tf.reduce_sum(w * tf.cast(steps + 1, tf.float32))
    return t.gradient(scaled, [w, steps])


print([g is None for g in traced()])


class Counted(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 1), name="kernel")
        self.counter = self.add_weight(shape=(), initializer="zeros", dtype="int32", name="counter")

    def call(self, inputs):
        return tf.matmul(inputs, self.kernel) * tf.cast(self.counter + 1, tf.float32)


model = tf.keras.Sequential([tf.keras.Input((3,)), Counted()])
model.compile(optimizer="sgd", loss="mse")
x, y = np.ones((4, 3), "float32"), np.ones((4, 1), "float32")
with tf.GradientTape() as tape:
    fit_loss = tf.reduce_mean((model(x) - y) ** 2)
print([g is None for g in tape.gradient(fit_loss, model.trainable_variables)])
model.fit(x, y, epochs=1, batch_size=4, verbose=0)
