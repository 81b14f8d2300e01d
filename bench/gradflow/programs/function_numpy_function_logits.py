# gradflow: buggy
# title: a traced train step takes the actor's logits from tf.numpy_function
# source: https://github.com/tensorflow/tensorflow/issues/47288
# shrunk: the report's A2C agent (a numpy environment step returning rewards, actions and actor
#   logits through tf.numpy_function) to a policy network whose logits come back through
#   numpy_function, 16 states, one step
# kind: function
# effect: none
# cause: numpy
# line: 34
# fix: keep-tensorflow-ops, no-gradient-op
# twin: function_numpy_function_logits_fixed.py
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
        actor_logits = tf.numpy_function(np_play, [states], tf.float32)
        actor_logits.set_shape([None, 2])
        log_probs = tf.nn.log_softmax(actor_logits)
        loss = -tf.reduce_mean(log_probs[:, 0] * returns)
    grads = tape.gradient(loss, policy.trainable_variables)
    _truth.record(grads, policy.trainable_variables)
    optimizer.apply_gradients(zip(grads, policy.trainable_variables))
    return loss


train_step(states, returns)
