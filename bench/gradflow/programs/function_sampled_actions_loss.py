# gradflow: buggy
# title: a policy-gradient loss built from the sampled actions themselves (integers)
# source: https://github.com/tensorflow/tensorflow/issues/9260
# shrunk: the thread's point (integer samples of a categorical have no gradient; use a REINFORCE
#   estimator) as a traced policy update whose loss multiplies the sampled actions by the
#   returns, 16 states, one step
# kind: function
# effect: none
# cause: nondifferentiable
# line: 31
# fix: differentiable-op, no-gradient-op
# twin: function_sampled_actions_loss_fixed.py
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
        loss = -tf.reduce_mean(tf.cast(actions, tf.float32) * returns)
    grads = tape.gradient(loss, policy.trainable_variables)
    _truth.record(grads, policy.trainable_variables)
    optimizer.apply_gradients(zip(grads, policy.trainable_variables))


update(states, returns)
