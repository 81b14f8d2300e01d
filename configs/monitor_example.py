"""A Keras model trained under gradscope.keras.Monitor: one of its ReLU layers dies.

    python configs/monitor_example.py            # writes timeline.json and logs/gradients/
    gradscope plot timeline.json -o norms.png
    gradscope check --timeline timeline.json     # exit 1: the dead layer

Ten steps of a learning rate 60 times too high (a bad warm restart at step 150) push the
pre-activations of a ReLU layer below zero for every input: its units stop passing a
gradient (a dying ReLU), and the layers below it stop learning too.
"""

from __future__ import annotations

import sys

import keras
import numpy as np

from gradscope.keras import Monitor

PENALTY = keras.regularizers.L1(0.05)  # meant to be 1e-5: it pushes dense_2's outputs to 0


def build() -> keras.Model:
    """Four ReLU layers and a head; dense_2 carries the too strong activity penalty."""
    layers = [keras.Input((32,))]
    for i in range(4):
        penalty = PENALTY if i == 2 else None
        layers.append(
            keras.layers.Dense(64, "relu", name=f"dense_{i}", activity_regularizer=penalty)
        )
    model = keras.Sequential([*layers, keras.layers.Dense(2, name="head")])
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(keras.optimizers.SGD(0.05), loss=loss)
    return model


def main(timeline: str = "timeline.json", tensorboard: str = "logs/gradients") -> None:
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2048, 32)) * 8).astype("float32")
    y = (x[:, :4].sum(axis=1) > 0).astype("int32")
    model = build()
    monitor = Monitor(every=5, timeline=timeline, tensorboard=tensorboard)
    model.fit(x, y, batch_size=32, epochs=6, verbose=0, callbacks=[monitor])
    for finding in monitor.findings:
        print(f"{finding['kind']:>9}  step {finding['from_step']:>4}  {finding['message']}")


if __name__ == "__main__":
    main(*sys.argv[1:])
