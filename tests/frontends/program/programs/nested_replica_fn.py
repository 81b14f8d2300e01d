"""A replica function defined inside the tf.function that runs it with strategy.run: autograph
converts it with the outer function, in the thread that traces it, not the replica's."""

import tensorflow as tf

X = [[1.0], [-1.0], [2.0], [3.0]]

strategy = tf.distribute.MirroredStrategy()
with strategy.scope():
    w = tf.Variable([1.0, 2.0], name="w")
    u = tf.Variable([1.0, 2.0], name="u")
data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices(X).batch(4))


@tf.function
def step(x):
    def replica(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) + tf.reduce_sum(tf.nn.relu(u * x))
        return tape.gradient(loss, [w, u])

    return strategy.run(replica, args=(x,))


for x in data:
    step(x)
