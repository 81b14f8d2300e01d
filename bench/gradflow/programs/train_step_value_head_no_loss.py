# gradflow: buggy
# title: an actor-critic model's train_step gives a loss to the policy head only
# source: https://github.com/keras-team/keras/issues/4746
# shrunk: the thread's policy network to which a second output head was added (then an operation has
#   None for gradient) to a two-head model whose custom train_step uses the policy output
#   only, 16 states, one epoch
# kind: train_step
# effect: none
# cause: unused
# line: 28
# fix: unread-output
# twin: train_step_value_head_no_loss_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


class ActorCritic(tf.keras.Model):
    def train_step(self, data):
        states, (actions, returns) = data
        with tf.GradientTape() as tape:
            policy, value = self(states, training=True)
            log_probs = tf.nn.log_softmax(policy)
            chosen = tf.gather(log_probs, actions, batch_dims=1)
            loss = -tf.reduce_mean(chosen * returns)
        grads = tape.gradient(loss, self.trainable_variables)
        _truth.record(grads, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


inputs = tf.keras.Input((4,))
hidden = tf.keras.layers.Dense(16, activation="relu")(inputs)
policy = tf.keras.layers.Dense(2, name="policy")(hidden)
value = tf.keras.layers.Dense(1, name="value")(hidden)
model = ActorCritic(inputs, [policy, value])
model.compile(optimizer="adam")
states = rng.normal(size=(16, 4)).astype("float32")
actions = rng.integers(0, 2, size=(16,))
returns = rng.normal(size=(16,)).astype("float32")
model.fit(states, (actions, returns), epochs=1, batch_size=16, verbose=0)
