"""``trainable`` changed where the program's fit() lines are not: the model comes built,
compiled and frozen from an imported module, and is unfrozen, fit, frozen and fit again here;
a callback freezes a layer while a fit() runs; another unfreezes one. Keras runs the step it
traced first each time, so the frozen layer is still trained and the unfrozen one never is.
Prints, as JSON, per case, the weights each change concerned and whether they changed after
it (bare Keras' own answer)."""

import json

import keras
import numpy as np
from parts import seeded

rng = np.random.default_rng(32)
x = rng.normal(size=(24, 6)).astype("float32")
y = (x[:, :2] * 2).astype("float32")
seen: dict[str, dict[str, bool]] = {}


def moved(model: keras.Model, layer: str, before: list[np.ndarray]) -> dict[str, bool]:
    weights = model.get_layer(layer).weights
    return {w.path: not np.array_equal(b, w.numpy()) for w, b in zip(weights, before, strict=True)}


def held(model: keras.Model, layer: str) -> list[np.ndarray]:
    return [w.numpy().copy() for w in model.get_layer(layer).weights]


from frozen_module import base, model  # noqa: E402

base.trainable = True
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
base.trainable = False
before = held(model, "base")
model.fit(x, y, batch_size=8, epochs=1, verbose=0)
seen["module"] = moved(model, "base", before)


def mlp(name: str, frozen: bool) -> keras.Model:
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, activation="relu", name=f"{name}_base")
    hidden.trainable = not frozen
    outputs = keras.layers.Dense(2, name=f"{name}_head")(hidden(inputs))
    model = seeded(keras.Model(inputs, outputs, name=name), 33)
    model.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
    return model


class Flip(keras.callbacks.Callback):
    """Sets the base's ``trainable`` after the first epoch, keeping its weights then."""

    def __init__(self, layer: str, trainable: bool) -> None:
        super().__init__()
        self.layer, self.trainable, self.then = layer, trainable, []

    def on_epoch_end(self, epoch: int, logs: object = None) -> None:
        if epoch == 0:
            self.model.get_layer(self.layer).trainable = self.trainable
            self.then = held(self.model, self.layer)


for case, frozen in (("freezing", False), ("unfreezing", True)):
    net = mlp(case, frozen)
    flip = Flip(f"{case}_base", frozen)
    net.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[flip])
    seen[case] = moved(net, f"{case}_base", flip.then)

print(json.dumps(seen))
