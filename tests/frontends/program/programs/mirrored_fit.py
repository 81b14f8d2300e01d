"""model.fit under the program's own MirroredStrategy: Keras distributes the train step."""

import numpy as np
import tensorflow as tf
from parts import seeded


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(16, 4)).astype("float32")
    return x, (x @ rng.normal(size=(4, 1))).astype("float32")


def model() -> tf.keras.Model:
    """Two dense layers; ``unused`` is built but on no path to the output."""
    inputs = tf.keras.Input((4,))
    hidden = tf.keras.layers.Dense(3, name="hidden")(inputs)
    unused = tf.keras.layers.Dense(2, name="unused")
    unused.build((None, 4))
    net = tf.keras.Model(inputs, tf.keras.layers.Dense(1, name="out")(hidden))
    net.unused = unused
    return seeded(net, 11)


if __name__ == "__main__":
    strategy = tf.distribute.MirroredStrategy()
    print("replicas", strategy.num_replicas_in_sync)
    with strategy.scope():
        net = model()
        net.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
    x, y = data()
    history = net.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    print("losses", [round(v, 6) for v in history.history["loss"]])
