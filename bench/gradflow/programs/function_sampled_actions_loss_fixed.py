# gradflow: fixed
# twin of: function_sampled_actions_loss.py
# change: the REINFORCE loss: the log-probability of the sampled actions (sparse cross-entropy)
#   times the returns
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

policy = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3)])
optimizer = tf.keras.optimizers.Adam(0.01)
states = rng.normal(size=(16, 4)).astype("float32")
returns = rng.normal(size=(16,)).astype("float32")


@tf.function
def update(states, returns):
    with tf.GradientTape() as tape:
        logits = policy(states)
        actions = tf.random.categorical(logits, 1, seed=1)[:, 0]
        neg_log_prob = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=actions,
                                                                      logits=logits)
        loss = tf.reduce_mean(neg_log_prob * returns)
    grads = tape.gradient(loss, policy.trainable_variables)
    _truth.record(grads, policy.trainable_variables)
    optimizer.apply_gradients(zip(grads, policy.trainable_variables))


update(states, returns)
