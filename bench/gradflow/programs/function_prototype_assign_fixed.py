# gradflow: fixed
# twin of: function_prototype_assign.py
# change: the prototype used as the tensor it is (tf.reduce_mean of the embeddings)
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

encoder = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(4)])
prototype = tf.Variable(tf.zeros([4]), trainable=False, name="prototype")
target = tf.constant([1.0, 0.0, 0.0, 1.0])
optimizer = tf.keras.optimizers.SGD(0.1)
x = rng.normal(size=(16, 6)).astype("float32")


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        embeddings = encoder(x)
        mean = tf.reduce_mean(embeddings, axis=0)
        prototype.assign(mean)
        loss = tf.reduce_sum(tf.square(mean - target))
    grads = tape.gradient(loss, encoder.trainable_variables)
    _truth.record(grads, encoder.trainable_variables)
    optimizer.apply_gradients(zip(grads, encoder.trainable_variables))


train_step(x)
