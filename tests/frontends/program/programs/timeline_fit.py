"""model.fit of a small ReLU network: 5 epochs of 4 batches, no shuffling."""

import tensorflow as tf
from parts import mlp, seeded

x, y, _ = mlp()
model = seeded(
    tf.keras.Sequential(
        [
            tf.keras.Input((4,)),
            tf.keras.layers.Dense(16, activation="relu", name="h"),
            tf.keras.layers.Dense(1, name="o"),
        ]
    ),
    8,
)
model.compile(tf.keras.optimizers.SGD(0.05), "mse")
model.fit(x, y, batch_size=8, epochs=5, shuffle=False, verbose=0)
