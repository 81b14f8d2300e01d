# gradflow: fixed
# twin of: distribute_forward_outside_tape.py
# change: logits = model(features, training=True) inside the tape
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
y = rng.integers(0, 4, size=(32,))
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))

with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(4)])
    optimizer = tf.keras.optimizers.SGD(0.1)


def step_fn(inputs):
    features, labels = inputs
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=32)
    grads = tape.gradient(loss, model.trainable_variables)
    _truth.record(grads, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def train_step(inputs):
    return strategy.run(step_fn, args=(inputs,))


train_step(batch)
