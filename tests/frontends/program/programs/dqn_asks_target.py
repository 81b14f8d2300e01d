"""keras-io examples/rl/deep_q_network_breakout.py's update (smaller), with the gradient asked
for the target network's variables: model_target.predict makes the target outside the tape,
and the call's var_list is model_target's, so every gradient is None and apply_gradients
raises 'No gradients provided for any variable'."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

num_actions = 3


def create_q_model():
    inputs = layers.Input(shape=(6, 6, 2))
    layer1 = layers.Conv2D(4, 3, strides=2, activation="relu")(inputs)
    layer2 = layers.Flatten()(layer1)
    layer3 = layers.Dense(8, activation="relu")(layer2)
    action = layers.Dense(num_actions, activation="linear")(layer3)
    return keras.Model(inputs=inputs, outputs=action)


keras.utils.set_random_seed(3)
model = create_q_model()
model_target = create_q_model()
optimizer = keras.optimizers.Adam(learning_rate=0.00025, clipnorm=1.0)
loss_function = keras.losses.Huber()
rng = np.random.default_rng(3)
state_sample = rng.random((4, 6, 6, 2), dtype="float32")
state_next_sample = rng.random((4, 6, 6, 2), dtype="float32")
rewards_sample = rng.random(4).astype("float32")
future_rewards = model_target.predict(state_next_sample, verbose=0)
updated_q_values = rewards_sample + 0.99 * tf.reduce_max(future_rewards, axis=1)
masks = tf.one_hot([0, 2, 1, 1], num_actions)
with tf.GradientTape() as tape:
    q_values = model(state_sample)
    q_action = tf.reduce_sum(tf.multiply(q_values, masks), axis=1)
    loss = loss_function(updated_q_values, q_action)
grads = tape.gradient(loss, model_target.trainable_variables)  # asked
optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))  # applied
