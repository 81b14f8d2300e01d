# gradflow: buggy
# title: actor-critic: the model's forward pass moved above the tape
# source: https://github.com/keras-team/keras-io/issues/406
# shrunk: the keras.io CartPole actor-critic example (tape definition moved next to where it is
#   used) to one synthetic state and one step, no environment
# kind: tape
# effect: none
# cause: outside-tape
# line: 29
# fix: move-into-tape
# twin: tape_actor_critic_outside_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

inputs = tf.keras.Input((4,))
common = tf.keras.layers.Dense(16, activation="relu")(inputs)
action = tf.keras.layers.Dense(2, activation="softmax")(common)
critic = tf.keras.layers.Dense(1)(common)
model = tf.keras.Model(inputs=inputs, outputs=[action, critic])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
huber_loss = tf.keras.losses.Huber()
state = tf.convert_to_tensor(rng.normal(size=(1, 4)).astype("float32"))
ret = 1.0

action_probs, critic_value = model(state)
with tf.GradientTape() as tape:
    log_prob = tf.math.log(action_probs[0, 0])
    diff = ret - critic_value[0, 0]
    actor_loss = -log_prob * diff
    critic_loss = huber_loss(tf.reshape(critic_value[0, 0], [1]), tf.constant([ret]))
    loss_value = actor_loss + critic_loss
grads = tape.gradient(loss_value, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
