"""Saved models built once per test module, as a user's training script saves them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest


@dataclass(frozen=True)
class Saved:
    """The saved files of a small two-headed Keras model, and data for it."""

    folder: Path
    keras: Path  # model.keras: compiled, one layer frozen
    h5: Path  # the same model in the legacy format
    inputs: Path  # inputs.npz: {"features": ...}
    labels: Path  # labels.npz: {"price": ..., "kind": ...}
    arrays: dict[str, np.ndarray]

    def load(self) -> Any:
        import keras

        return keras.models.load_model(self.keras)


def two_heads() -> Any:
    """A model a user would fine-tune: a body (Dense, BatchNormalization, Dropout), a frozen
    layer, a price head (regression) and a kind head (3 classes); compiled with a loss per
    output and loss weights."""
    import keras

    features = keras.Input((6,), name="features")
    h = keras.layers.Dense(8, activation="relu", name="body")(features)
    h = keras.layers.BatchNormalization(name="norm")(h)
    h = keras.layers.Dropout(0.5, name="drop")(h)
    h = keras.layers.Dense(8, activation="tanh", name="stem")(h)
    price = keras.layers.Dense(1, name="price")(h)
    kind = keras.layers.Dense(3, activation="softmax", name="kind")(h)
    model = keras.Model(features, {"price": price, "kind": kind}, name="shop")
    model.get_layer("stem").trainable = False
    model.compile(
        optimizer="adam",
        loss={"price": "mse", "kind": "sparse_categorical_crossentropy"},
        loss_weights={"price": 0.5, "kind": 1.0},
    )
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Saved:
    folder = tmp_path_factory.mktemp("saved")
    model = two_heads()
    model.save(folder / "model.keras")
    model.save(folder / "model.h5")
    rng = np.random.default_rng(7)
    arrays = {
        "features": rng.standard_normal((5, 6)).astype("float32"),
        "price": rng.random((5, 1)).astype("float32"),
        "kind": rng.integers(0, 3, size=(5,)).astype("int32"),
    }
    np.savez(folder / "inputs.npz", features=arrays["features"])
    np.savez(folder / "labels.npz", price=arrays["price"], kind=arrays["kind"])
    return Saved(folder, folder / "model.keras", folder / "model.h5", folder / "inputs.npz",
                 folder / "labels.npz", arrays)  # fmt: skip


def truth_of(model: Any, loss: Callable[[], Any]) -> dict[str, str]:
    """Bare TensorFlow's verdict for every variable gradscope reports of a Keras model (its
    trainable weights and frozen layers' weights; not BatchNormalization's statistics)."""
    from tests.frontends.saved.truth import verdicts

    shown = [v for v in model.variables if v.trainable or v._value.trainable]
    return verdicts(loss, shown, model.trainable_variables)
