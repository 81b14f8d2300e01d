"""A TF2 DQN tutorial's train step (tf.function): the target computed in the tape with the
target network under stop_gradient, and the gradient asked for target_nn's variables."""

import tensorflow as tf

num_actions = 2


def make_net(name):
    return tf.keras.Sequential(
        [
            tf.keras.Input((4,)),
            tf.keras.layers.Dense(8, activation="relu", name="hidden"),
            tf.keras.layers.Dense(num_actions, name="q"),
        ],
        name=name,
    )


tf.keras.utils.set_random_seed(5)
main_nn = make_net("main")
target_nn = make_net("target")
optimizer = tf.keras.optimizers.Adam(1e-4)
mse = tf.keras.losses.MeanSquaredError()


@tf.function
def train_step(states, actions, rewards, next_states):
    with tf.GradientTape() as tape:
        max_next_qs = tf.reduce_max(target_nn(next_states), axis=-1)
        target = tf.stop_gradient(rewards + 0.99 * max_next_qs)  # cut
        qs = main_nn(states)
        masked_qs = tf.reduce_sum(tf.one_hot(actions, num_actions) * qs, axis=-1)
        loss = mse(target, masked_qs)
    grads = tape.gradient(loss, target_nn.trainable_variables)  # asked
    optimizer.apply_gradients(zip(grads, main_nn.trainable_variables, strict=True))  # applied
    return loss


train_step(
    tf.random.normal((8, 4)),
    tf.constant([0, 1] * 4),
    tf.random.normal((8,)),
    tf.random.normal((8, 4)),
)
