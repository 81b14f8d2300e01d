"""keras-io examples/rl/deep_q_network_breakout.py: the Q-learning update, with the target
network's prediction made by model_target.predict (NumPy: no gradient, by design)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers

SOURCE = "keras-team/keras-io examples/rl/deep_q_network_breakout.py"
num_actions = 3


def create_q_model(name):
    inputs = layers.Input(shape=(6, 6, 2))
    layer1 = layers.Conv2D(4, 3, strides=2, activation="relu")(inputs)
    layer4 = layers.Flatten()(layer1)
    layer5 = layers.Dense(8, activation="relu")(layer4)
    action = layers.Dense(num_actions, activation="linear")(layer5)
    return keras.Model(inputs=inputs, outputs=action, name=name)


def build():
    keras.utils.set_random_seed(21)
    model = create_q_model("q")
    model_target = create_q_model("q_target")
    rng = np.random.default_rng(21)
    state_sample = rng.random((4, 6, 6, 2), dtype="float32")
    state_next_sample = rng.random((4, 6, 6, 2), dtype="float32")
    rewards_sample = [1.0, 0.0, 0.5, 0.0]
    action_sample = [0, 2, 1, 1]
    done_sample = tf.convert_to_tensor([0.0, 0.0, 1.0, 0.0])
    gamma = 0.99
    future_rewards = model_target.predict(state_next_sample, verbose=0)
    updated_q_values = rewards_sample + gamma * tf.reduce_max(future_rewards, axis=1)
    updated_q_values = updated_q_values * (1 - done_sample) - done_sample
    masks = tf.one_hot(action_sample, num_actions)
    loss_function = keras.losses.Huber()

    def loss():
        q_values = model(state_sample)
        q_action = tf.reduce_sum(tf.multiply(q_values, masks), axis=1)
        return loss_function(updated_q_values, q_action)

    return {
        "losses": {"huber": loss},
        "variables": model.trainable_variables + model_target.trainable_variables,
    }
