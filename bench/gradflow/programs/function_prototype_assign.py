# gradflow: buggy
# title: class prototypes cached in a variable with assign, then the loss reads the variable
# source: https://github.com/sifubro/tensorflow
# shrunk: the notebook's point (assign_add blocks gradients: the tape sees only the variable's
#   current state) as a prototype loss whose prototype is written into a variable inside a
#   traced step, 16 samples, one step
# kind: function
# effect: none
# cause: assign
# line: 31
# fix: assign-as-tensor
# twin: function_prototype_assign_fixed.py
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
        prototype.assign(tf.reduce_mean(embeddings, axis=0))
        loss = tf.reduce_sum(tf.square(prototype - target))
    grads = tape.gradient(loss, encoder.trainable_variables)
    _truth.record(grads, encoder.trainable_variables)
    optimizer.apply_gradients(zip(grads, encoder.trainable_variables))


train_step(x)
