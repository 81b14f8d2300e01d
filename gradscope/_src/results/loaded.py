"""What a report says of a loaded model: the file, how it was loaded and run, and which of its
variables training can reach (``loaded`` in the JSON report of a ``.keras``, ``.h5`` or
SavedModel target)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Loaded:
    """A loaded model's facts, as plain data.

    Attributes:
        path: the file or directory as given.
        format: ``keras``, ``h5``, ``saved_model`` or ``keras_model`` (an object from the API).
        model: the Keras model's name (None for a SavedModel).
        signature: the SavedModel signature called (None for a Keras model).
        losses: each report loss and what it computes.
        inputs: ``random``, ``arrays`` (the API's) or the ``.npy``/``.npz`` file.
        labels: the same for labels.
        training: whether layers ran in training mode.
        safe_mode: whether Keras' safe_mode was on (and unsafe SavedModel ops refused).
        trainable: the variables training updates.
        frozen: variables the model holds but does not train (frozen layers, ``--freeze``).
        untracked: variables the losses read that the model does not track: fit and an
            optimizer given its ``trainable_variables`` never update them.
        stale: trainable variables ``fit`` does not train: made trainable after its train
            step was built, without ``compile()`` again.
        freeze: what each ``--freeze`` glob changed.
        options: each report loss and the ``--loss`` value that computes it alone
            (``price=mse``), for the commands a report suggests.
    """

    path: str
    format: str
    model: str | None = None
    signature: str | None = None
    losses: tuple[tuple[str, str], ...] = ()
    inputs: str = "random"
    labels: str | None = "random"
    training: bool = False
    safe_mode: bool = True
    trainable: tuple[str, ...] = ()
    frozen: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    freeze: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()

    def loss_option(self, loss: str) -> str:
        """The ``--loss`` value that computes ``loss`` alone (its name when none does)."""
        return dict(self.options).get(loss, loss)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "model": self.model,
            "signature": self.signature,
            "losses": dict(self.losses),
            "inputs": self.inputs,
            "labels": self.labels,
            "training": self.training,
            "safe_mode": self.safe_mode,
            "variables": {
                "trainable": list(self.trainable),
                "frozen": list(self.frozen),
                "untracked": list(self.untracked),
                "stale": list(self.stale),
            },
            "freeze": list(self.freeze),
        }
