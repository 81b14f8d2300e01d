# gradflow: fixed
# twin of: function_numpy_function_logits.py
# change: the logits computed by the model inside the tape, not through numpy_function
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

policy = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(16, activation="relu"),
                              tf.keras.layers.Dense(2)])
optimizer = tf.keras.optimizers.Adam(0.01)
states = rng.normal(size=(16, 4)).astype("float32")
returns = rng.normal(size=(16,)).astype("float32")


def np_play(batch):
    return policy(batch).numpy().astype(np.float32)


@tf.function
def train_step(states, returns):
    with tf.GradientTape() as tape:
        actor_logits = policy(states)
        log_probs = tf.nn.log_softmax(actor_logits)
        loss = -tf.reduce_mean(log_probs[:, 0] * returns)
    grads = tape.gradient(loss, policy.trainable_variables)
    _truth.record(grads, policy.trainable_variables)
    optimizer.apply_gradients(zip(grads, policy.trainable_variables))
    return loss


train_step(states, returns)
