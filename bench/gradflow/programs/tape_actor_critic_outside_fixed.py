# gradflow: fixed
# twin of: tape_actor_critic_outside.py
# change: the forward pass model(state) inside the tape again
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

with tf.GradientTape() as tape:
    action_probs, critic_value = model(state)
    log_prob = tf.math.log(action_probs[0, 0])
    diff = ret - critic_value[0, 0]
    actor_loss = -log_prob * diff
    critic_loss = huber_loss(tf.reshape(critic_value[0, 0], [1]), tf.constant([ret]))
    loss_value = actor_loss + critic_loss
grads = tape.gradient(loss_value, model.trainable_variables)
_truth.record(grads, model.trainable_variables)
optimizer.apply_gradients(zip(grads, model.trainable_variables))
