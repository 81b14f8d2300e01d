# gradflow: buggy
# title: a distributed custom loop whose loss is computed on argmax of the logits
# source: https://github.com/keras-team/keras/issues/11157,
#   https://github.com/tensorflow/tensorflow/issues/15278
# shrunk: the reports' argmax loss moved into a MirroredStrategy custom training loop on 2 logical
#   CPUs, 32 samples split in two, one step
# kind: distribute
# effect: none
# cause: nondifferentiable
# line: 37
# fix: soft-argmax, differentiable-op, no-gradient-op
# twin: distribute_argmax_loss_fixed.py
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
        predicted = tf.cast(tf.argmax(logits, axis=-1), tf.float32)
        per_example = tf.square(predicted - tf.cast(labels, tf.float32))
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=32)
    grads = tape.gradient(loss, model.trainable_variables)
    _truth.record(grads, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


@tf.function
def train_step(inputs):
    return strategy.run(step_fn, args=(inputs,))


train_step(batch)
