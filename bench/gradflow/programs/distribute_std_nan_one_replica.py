# gradflow: buggy
# title: a sqrt-of-variance feature under MirroredStrategy: the padded rows land on one replica
# source: https://github.com/tensorflow/tensorflow/issues/42889
# shrunk: the report's NaN from tf.sqrt near zero in a MirroredStrategy custom loop whose last 8 of
#   32 rows are zero padding (all on the second replica), one step
# kind: distribute
# effect: nan
# cause: nan
# line: 37
# fix: double-where
# twin: distribute_std_nan_one_replica_fixed.py
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
        spread = tf.sqrt(tf.math.reduce_variance(h, axis=1))
        loss = tf.nn.compute_average_loss(tf.square(spread - target), global_batch_size=32)
    grads = tape.gradient(loss, hidden.trainable_variables)
    _truth.record(grads, hidden.trainable_variables)
    optimizer.apply_gradients(zip(grads, hidden.trainable_variables))
    return loss


@tf.function
def train_step(inputs):
    return strategy.run(step_fn, args=(inputs,))


train_step(batch)
