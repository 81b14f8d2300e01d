import tensorflow as tf

logits = tf.Variable([[0.5, -0.2, 0.1]], name="logits")
reward = tf.constant([1.0, 3.0, 2.0])
with tf.GradientTape() as tape:
    actions = tf.random.categorical(logits, 8, seed=1)[0]  # <- fix
    rewards = tf.gather(reward, actions)
    loss = -tf.reduce_mean(rewards)
grads = tape.gradient(loss, [logits])
