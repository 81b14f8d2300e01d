"""A custom training loop under the program's own MirroredStrategy, in a tf.function; the
loss is masked by the data, so one replica's share can give a variable no usable gradient.

``python mirrored_loop.py [--mask] [--eager] [--tf-gradients] [--argmax]``: with --mask, the
second half of the batch (the second replica's share) has only negative first features, and the
relu head sees none of it; with --eager, strategy.run is called eagerly, not inside a
tf.function; with --tf-gradients, the step asks tf.gradients instead of a tape; with --argmax,
the loss is computed on the argmax of the head, so no variable gets a gradient and Keras'
apply_gradients raises "No gradients provided" while the first replica's step is traced.
"""

import sys

import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 8


def batch(mask: bool) -> np.ndarray:
    """The global batch: 8 rows of 4 features (rows 4..7 negative with --mask)."""
    x = np.linspace(-1.0, 1.0, 32, dtype=np.float32).reshape(8, 4) + 1.5
    if mask:
        x[4:] = -x[4:]
    return x


def initial() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.normal(size=(4, 3)).astype("float32"), rng.normal(size=(3,)).astype("float32")


def loss_of(x, w, b):
    """Each example's loss, summed over the global batch (tf.nn.compute_average_loss)."""
    head = tf.nn.relu(x[:, :1]) * tf.matmul(x, w)
    if "--argmax" in sys.argv:
        per_example = tf.cast(tf.argmax(head + b, axis=1), tf.float32)
    else:
        per_example = tf.reduce_sum(tf.square(head + b), axis=1)
    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)


if __name__ == "__main__":
    strategy = tf.distribute.MirroredStrategy()
    print("replicas", strategy.num_replicas_in_sync)
    w0, b0 = initial()
    with strategy.scope():
        w = tf.Variable(w0, name="w")
        b = tf.Variable(b0, name="b")
        opt = tf.keras.optimizers.SGD(0.1)
    data = tf.data.Dataset.from_tensor_slices(batch("--mask" in sys.argv)).batch(GLOBAL_BATCH)

    def step(x):
        with tf.GradientTape() as tape:
            loss = loss_of(x, w, b)
        if "--tf-gradients" in sys.argv:
            grads = tf.gradients(loss, [w, b])
        else:
            grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b], strict=True))
        return loss

    def train(x):
        return strategy.reduce("SUM", strategy.run(step, args=(x,)), axis=None)

    if "--eager" not in sys.argv:
        train = tf.function(train)

    for epoch in range(3):
        for x in strategy.experimental_distribute_dataset(data):
            print(f"epoch {epoch}: loss {float(train(x)):.6f}")
