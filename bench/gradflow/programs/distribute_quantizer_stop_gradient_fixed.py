# gradflow: fixed
# twin of: distribute_quantizer_stop_gradient.py
# change: the straight-through estimator z + stop_gradient(round(z) - z)
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)

x = rng.normal(size=(32, 8)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(x).batch(32)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
with strategy.scope():
    encoder = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4)])
    decoder = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8)])
    optimizer = tf.keras.optimizers.Adam(0.01)


def step_fn(features):
    with tf.GradientTape() as tape:
        z = encoder(features)
        z_hat = z + tf.stop_gradient(tf.round(z) - z)
        per_example = tf.reduce_mean(tf.square(features - decoder(z_hat)), axis=1)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=32)
    variables = encoder.trainable_variables + decoder.trainable_variables
    grads = tape.gradient(loss, variables)
    _truth.record(grads, variables)
    optimizer.apply_gradients(zip(grads, variables))
    return loss


@tf.function
def train_step(features):
    return strategy.run(step_fn, args=(features,))


train_step(batch)
