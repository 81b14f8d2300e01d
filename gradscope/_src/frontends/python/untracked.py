"""Variables a target's losses read that its Keras model does not track: ``fit`` and an optimizer
given ``model.trainable_variables`` never update them, whatever gradient they get.

The common way to get there is a loaded model wrapped in a ``Lambda`` layer
(``Lambda(lambda x: base(x))``): Keras tracks no weight a Lambda's function uses, so the whole
base drops out of ``model.trainable_variables`` while its gradients flow fine. The note names
the Lambda layer and the model it wraps, once for all their variables.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from gradscope._src.frontends.python import variables as tv
from gradscope._src.printable import printable


def untracked(tf: Any, model: Any, chosen: Sequence[tv.Chosen]) -> list[tv.Chosen]:
    """The chosen variables ``model`` does not hold."""
    held = set()
    for value in getattr(model, "variables", ()):
        inner = tv.tf_variable(tf, value)
        if inner is not None:
            held.add(inner.ref())
    return [c for c in chosen if c.variable.ref() not in held]


def _lambdas(tf: Any, model: Any) -> dict[Any, tuple[str, str]]:
    """Variable ref -> (Lambda layer name, the name of what its function calls) for every
    Keras model or layer a Lambda layer's function refers to."""
    import keras

    out: dict[Any, tuple[str, str]] = {}
    with contextlib.suppress(Exception):  # a half-built model: nothing to say
        for layer in model._flatten_layers(include_self=False, recursive=True):
            if not isinstance(layer, keras.layers.Lambda):
                continue
            for value in tv._referenced(layer.function):
                if isinstance(value, keras.layers.Layer):
                    for weight in value.variables:
                        inner = tv.tf_variable(tf, weight)
                        if inner is not None:
                            out.setdefault(inner.ref(), (str(layer.name), str(value.name)))
    return out


def notes(tf: Any, registry: tv.Registry, model: Any, chosen: Sequence[tv.Chosen]) -> list[str]:
    """One note per Lambda layer (and one for the rest) whose variables ``model`` leaves out;
    raw ``tf.Variable`` objects no Keras object holds have their own note already."""
    missing = [c for c in untracked(tf, model, chosen) if registry.tracked(c.variable)]
    if not missing:
        return []
    owners = _lambdas(tf, model)
    groups: dict[tuple[str, str] | None, list[str]] = {}
    for c in missing:
        groups.setdefault(owners.get(c.variable.ref()), []).append(c.name)
    name = printable(str(getattr(model, "name", "the model")))
    out = []
    for owner, names in groups.items():
        listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        count = f"{len(names)} variable{'s' if len(names) != 1 else ''} ({listed})"
        if owner is not None:
            layer, inner = owner
            out.append(
                f"{count} of {printable(inner)} are read inside Lambda layer "
                f"{printable(layer)!r} of model {name!r}, and Keras does not track what a "
                f"Lambda's function uses: {name}.trainable_variables leaves them out, so fit "
                f"never updates them although they get gradients; call {printable(inner)} as a "
                f"layer (x = {printable(inner)}(x)) instead of wrapping it in a Lambda"
            )
        else:
            out.append(
                f"{count} are read by the losses but not held by model {name!r}: "
                f"{name}.trainable_variables leaves them out, so fit never updates them although "
                "they get gradients"
            )
    return out
