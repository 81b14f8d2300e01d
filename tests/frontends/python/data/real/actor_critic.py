"""tensorflow/docs tutorials/reinforcement_learning/actor_critic.ipynb: the shared body with
actor and critic heads; the actor loss reads the log-probability of the actions taken."""

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers

SOURCE = "tensorflow/docs tutorials/reinforcement_learning/actor_critic.ipynb"


class ActorCritic(tf.keras.Model):
    def __init__(self, num_actions, num_hidden_units):
        super().__init__()
        self.common = layers.Dense(num_hidden_units, activation="relu")
        self.actor = layers.Dense(num_actions)
        self.critic = layers.Dense(1)

    def call(self, inputs):
        x = self.common(inputs)
        return self.actor(x), self.critic(x)


huber_loss = tf.keras.losses.Huber(reduction=tf.keras.losses.Reduction.SUM)


def build():
    tf.keras.utils.set_random_seed(14)
    model = ActorCritic(2, 8)
    states = np.random.default_rng(14).normal(size=(5, 4)).astype("float32")
    actions = tf.constant([0, 1, 1, 0, 1])
    returns = tf.constant([1.0, 0.5, 0.2, 0.1, 0.0])
    model(states)

    def compute_loss():
        action_logits_t, values = model(states)
        action_probs_t = tf.nn.softmax(action_logits_t)
        action_probs = tf.gather(action_probs_t, actions, axis=1, batch_dims=1)
        values = tf.squeeze(values)
        advantage = returns - values
        action_log_probs = tf.math.log(action_probs)
        actor_loss = -tf.math.reduce_sum(action_log_probs * advantage)
        critic_loss = huber_loss(values, returns)
        return actor_loss + critic_loss

    def actor_only():
        action_logits_t, values = model(states)
        action_probs = tf.gather(tf.nn.softmax(action_logits_t), actions, axis=1, batch_dims=1)
        advantage = tf.stop_gradient(returns - tf.squeeze(values))
        return -tf.math.reduce_sum(tf.math.log(action_probs) * advantage)

    return {
        "losses": {"loss": compute_loss, "actor": actor_only},
        "variables": model.trainable_variables,
    }
