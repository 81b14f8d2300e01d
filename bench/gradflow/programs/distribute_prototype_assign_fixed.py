# gradflow: fixed
# twin of: distribute_prototype_assign.py
# change: the loss reads the mean embedding as a tensor
import numpy as np
import tensorflow as tf

import _truth

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
rng = np.random.default_rng(0)

x = rng.normal(size=(32, 6)).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(x).batch(32)
batch = next(iter(strategy.experimental_distribute_dataset(dataset)))
target = tf.constant([1.0, 0.0, 0.0, 1.0])
with strategy.scope():
    encoder = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(4)])
    prototype = tf.Variable(tf.zeros([4]), trainable=False, name="prototype",
                            synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.MEAN)
    optimizer = tf.keras.optimizers.SGD(0.1)


def step_fn(features):
    with tf.GradientTape() as tape:
        embeddings = encoder(features)
        mean = tf.reduce_mean(embeddings, axis=0)
        prototype.assign(mean)
        loss = tf.reduce_sum(tf.square(mean - target)) / strategy.num_replicas_in_sync
    grads = tape.gradient(loss, encoder.trainable_variables)
    _truth.record(grads, encoder.trainable_variables)
    optimizer.apply_gradients(zip(grads, encoder.trainable_variables))
    return loss


@tf.function
def train_step(features):
    return strategy.run(step_fn, args=(features,))


train_step(batch)
