import tensorflow as tf

logits = tf.Variable([[0.5, -0.2, 0.1]], name="logits")
reward = tf.constant([1.0, 3.0, 2.0])
with tf.GradientTape() as tape:
    actions = tf.random.categorical(logits, 8, seed=1)[0]
    rewards = tf.gather(reward, actions)
    loss = -tf.reduce_mean(rewards)
    logp = tf.reduce_sum(tf.one_hot(actions, 3) * tf.nn.log_softmax(logits), -1)
    surrogate = tf.reduce_mean(tf.stop_gradient(-rewards) * logp)
    loss = loss + (surrogate - tf.stop_gradient(surrogate))
grads = tape.gradient(loss, [logits])
