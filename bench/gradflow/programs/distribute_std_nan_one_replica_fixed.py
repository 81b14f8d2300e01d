# gradflow: fixed
# twin of: distribute_std_nan_one_replica.py
# change: sqrt(variance + 1e-6)
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
x[24:] = 0.0
y = rng.normal(size=(32,)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
with strategy.scope():
    hidden = tf.keras.layers.Dense(8)
    hidden.build((None, 6))
    optimizer = tf.keras.optimizers.SGD(0.01)


def step_fn(inputs):
    features, target = inputs
    with tf.GradientTape() as tape:
        h = hidden(features)
        spread = tf.sqrt(tf.math.reduce_variance(h, axis=1) + 1e-6)
        loss = tf.nn.compute_average_loss(tf.square(spread - target), global_batch_size=32)
    grads = tape.gradient(loss, hidden.trainable_variables)
    _truth.record(grads, hidden.trainable_variables)
    optimizer.apply_gradients(zip(grads, hidden.trainable_variables))
    return loss


@tf.function
def train_step(inputs):
    return strategy.run(step_fn, args=(inputs,))


train_step(batch)
