"""The options of a saved model (``.keras``, ``.h5``, a SavedModel directory), shared by
``inspect``, ``check``, ``diff`` and ``graph``.

``--loss`` keeps one meaning, the losses to report: a spec or a Python target defines its
losses and ``--loss`` picks among them; a saved model defines none (a compiled one at most),
so ``--loss`` says which to compute (``compiled``, ``mse``, ``OUTPUT=NAME``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

#: ``--loss`` help for commands that pick losses and compute a saved model's.
LOSS_HELP = (
    "A spec's or Python target's loss to report (repeatable). For a saved model, the loss "
    "to compute: compiled (what compile() saved; the default when there is one), a Keras "
    "loss name for every output (mse; repeated: one per output, in order), OUTPUT=NAME, or "
    "a name with arguments: 'Huber(delta=2.0)'."
)


def saved_options(fn: F) -> F:
    """The options only a saved model takes; the command passes them on with
    ``**saved_arguments(...)``."""
    options = [
        click.option(
            "--inputs",
            metavar="FILE",
            default=None,
            help="Saved model: its inputs, a .npy file (one input) or .npz (by input "
            "name); default: random values of the inputs' shapes (said in a note).",
        ),
        click.option(
            "--labels",
            metavar="FILE",
            default=None,
            help="Saved model: the labels, .npy or .npz (by output name); default: "
            "random labels each loss accepts.",
        ),
        click.option(
            "--freeze",
            "freeze",
            multiple=True,
            metavar="GLOB",
            help="Saved model: freeze the layers GLOB matches (path, name or class: "
            "MobileNetV3Small, 'block_1*', BatchNormalization), in order, as "
            "layer.trainable = False; !GLOB unfreezes (repeatable).",
        ),
        click.option(
            "--training",
            is_flag=True,
            help="Saved model: run layers in training mode, as fit does (Dropout "
            "drops, BatchNormalization uses the batch); default: inference mode.",
        ),
        click.option(
            "--custom-objects",
            "custom_objects",
            multiple=True,
            metavar="MODULE:NAME",
            help="Saved model: a custom class or function it needs, imported from "
            "module.path:NAME or file.py:NAME (that module's code runs; repeatable).",
        ),
        click.option(
            "--signature",
            metavar="NAME",
            default=None,
            help="SavedModel directory: the signature to call (default: serving_default).",
        ),
        click.option(
            "--no-safe-mode",
            "unsafe",
            is_flag=True,
            help="Saved model: load with Keras' safe_mode off, so a Lambda layer's "
            "Python code or a TFSMLayer in the file runs (and a SavedModel's file "
            "or Python ops): only for files you trust as your own code.",
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def loss_option(fn: F) -> F:
    """``--loss`` for commands that had none (``check``, ``diff``): a saved model's loss."""
    return click.option(
        "--loss",
        "saved_loss",
        multiple=True,
        metavar="L",
        help="Saved model: the loss to compute: compiled (the default when compile() saved "
        "one), a Keras loss name for every output (mse; repeated: one per output), or "
        "OUTPUT=NAME (repeatable).",
    )(fn)


def saved_arguments(given: dict[str, Any]) -> dict[str, Any]:
    """The API's keywords for the options of ``saved_options`` (and ``loss_option``)."""
    out: dict[str, Any] = {
        "inputs": given.get("inputs"),
        "labels": given.get("labels"),
        "freeze": list(given.get("freeze") or ()) or None,
        "training": bool(given.get("training")),
        "custom_objects": list(given.get("custom_objects") or ()) or None,
        "safe_mode": not given.get("unsafe"),
        "signature": given.get("signature"),
    }
    if given.get("saved_loss"):
        out["loss"] = list(given["saved_loss"])
    return out


def is_saved(target: str) -> bool:
    """Whether the command was given a saved model (cheap: a name and a file's first bytes)."""
    from gradscope._src.frontends.saved import is_saved_target

    return is_saved_target(target)


def pick_or_compute(target: str, losses: Sequence[str]) -> dict[str, Any]:
    """``inspect``'s ``--loss`` values: losses to pick (``losses=``) for a spec or Python
    target, the loss to compute (``loss=``) for a saved model."""
    if is_saved(target):
        return {"loss": list(losses) or None, "losses": None}
    return {"losses": list(losses) or None}
