# gradflow: buggy
# title: a distributed step writes the class prototype into a variable and reads it back
# source: https://github.com/sifubro/tensorflow
# shrunk: the notebook's point (assign blocks gradients) as a prototype loss in a MirroredStrategy
#   custom loop, the prototype a replica-local variable, one step
# kind: distribute
# effect: none
# cause: assign
# line: 37
# fix: assign-as-tensor
# twin: distribute_prototype_assign_fixed.py
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
        prototype.assign(tf.reduce_mean(embeddings, axis=0))
        loss = tf.reduce_sum(tf.square(prototype - target)) / strategy.num_replicas_in_sync
    grads = tape.gradient(loss, encoder.trainable_variables)
    _truth.record(grads, encoder.trainable_variables)
    optimizer.apply_gradients(zip(grads, encoder.trainable_variables))
    return loss


@tf.function
def train_step(features):
    return strategy.run(step_fn, args=(features,))


train_step(batch)
