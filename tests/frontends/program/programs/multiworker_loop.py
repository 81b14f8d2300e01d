"""A custom loop under the program's own MultiWorkerMirroredStrategy: one process per worker,
started with TF_CONFIG by the program's launcher; each worker trains on its half of the batch."""

import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 8


def batch() -> np.ndarray:
    return np.arange(32, dtype=np.float32).reshape(8, 4) / 10.0


def loss_of(x, w):
    per_example = tf.reduce_sum(tf.square(tf.matmul(x, w)), axis=1)
    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)


if __name__ == "__main__":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    worker = strategy.cluster_resolver.task_id
    with strategy.scope():
        w = tf.Variable(np.ones((4, 3), np.float32), name="w")
        opt = tf.keras.optimizers.SGD(0.01)

    def step(x):
        with tf.GradientTape() as tape:
            loss = loss_of(x, w)
        grads = tape.gradient(loss, [w])
        opt.apply_gradients(zip(grads, [w], strict=True))
        return loss

    @tf.function
    def train(x):
        return strategy.reduce("SUM", strategy.run(step, args=(x,)), axis=None)

    mine = batch()[4 * worker : 4 * worker + 4]
    for epoch in range(2):
        print(f"worker {worker} epoch {epoch}: loss {float(train(tf.constant(mine))):.6f}")
