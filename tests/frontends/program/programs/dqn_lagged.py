"""A DQN step whose target network is called ``lagged``: copied from the online network with
set_weights(get_weights()) (its first layer) and per-variable assign (its second), kept out of
the loss by stop_gradient, and given to the tape with the online network's variables."""

import keras
import tensorflow as tf

keras.utils.set_random_seed(0)
online = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)],
    name="online",
)
lagged = keras.Sequential(
    [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)],
    name="lagged",
)
lagged.layers[0].set_weights(online.layers[0].get_weights())  # copied
for mine, theirs in zip(lagged.layers[1].weights, online.layers[1].weights, strict=True):
    mine.assign(theirs)  # assigned
states, next_states = tf.random.normal((5, 4)), tf.random.normal((5, 4))
actions, rewards = tf.constant([0, 1, 1, 0, 1]), tf.random.normal((5,))
with tf.GradientTape() as tape:
    q = tf.gather(online(states), actions, batch_dims=1)
    best_next = tf.reduce_max(tf.stop_gradient(lagged(next_states)), axis=1)  # cut
    loss = tf.reduce_mean((rewards + 0.99 * best_next - q) ** 2)
variables = online.trainable_variables + lagged.trainable_variables
grads = tape.gradient(loss, variables)
