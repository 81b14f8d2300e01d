"""Variables a tape never watches: a non-trainable one, one kept from a tape with
``watch_accessed_variables=False``, and a BatchNormalization's moving statistics."""

import keras
import numpy as np
import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
s = tf.Variable([3.0, 4.0], name="s", trainable=False)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * s)
frozen = tape.gradient(loss, [w, s])
with tf.GradientTape(watch_accessed_variables=False) as tape:
    tape.watch(s)
    loss = tf.reduce_sum(w * s)
kept = tape.gradient(loss, [w, s])


@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * s)
    return tape.gradient(loss, [w, s])


traced = step()
keras.utils.set_random_seed(0)
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="a"),
                          keras.layers.BatchNormalization(name="bn")], name="net")  # fmt: skip
x = np.arange(12, dtype="float32").reshape(4, 3)
for training in (False, True):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x, training=training) ** 2)
    bn = tape.gradient(loss, model.get_layer("bn").variables)
