"""Loaded models inside a target's Keras model, and what training reaches of them.

A loaded model wrapped in a ``Lambda`` layer (``Lambda(lambda x: base(x))``) is read but not
tracked: Keras tracks no weight a Lambda's function uses, so the whole base drops out of
``model.trainable_variables`` (``fit`` never updates it) while its gradients flow fine; the
note names the Lambda layer and the model it wraps, once for all their variables. A
``keras.layers.TFSMLayer`` calls one SavedModel endpoint and tracks the variables it reads,
as trainable as their ``tf.Variable`` flags say, which is not what the saved model had frozen.
A base unfrozen after ``fit`` built its train step is trainable, gets gradients, and is still
not trained: the step keeps the variable list it was traced with until ``compile()`` runs again.
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
    """One note per Lambda layer (and one for the rest) whose variables ``model`` leaves out
    (raw ``tf.Variable`` objects no Keras object holds have their own note already), and one
    per ``TFSMLayer``."""
    return [
        *_untracked_notes(tf, registry, model, chosen),
        *_tfsm_notes(model),
        *_stale_notes(model),
        *_training_false_notes(model),
    ]


def _training_false_notes(model: Any) -> list[str]:
    """Layers the model calls with ``training=False`` (``base(x, training=False)``, the
    transfer-learning guide's way to keep BatchNormalization in inference mode) whose
    BatchNormalization layers are trainable: Keras 3's functional models pass the outer
    call's ``training`` to every layer, over the one recorded (keras-team/keras#20285), so
    under ``fit`` they normalize by the batch and move their statistics."""
    import keras

    out = []
    with contextlib.suppress(Exception):  # a subclassed model has no graph of calls
        for layer in model._flatten_layers(include_self=False, recursive=True):
            nodes = getattr(layer, "_inbound_nodes", None) or []
            if not any(n.arguments.kwargs.get("training") is False for n in nodes):
                continue
            inner = [layer, *layer._flatten_layers(include_self=False, recursive=True)]
            norms = [
                x for x in inner if isinstance(x, keras.layers.BatchNormalization) and x.trainable
            ]
            if not norms:
                continue
            name = printable(str(layer.name))
            out.append(
                f"{name} is called with training=False in model "
                f"{printable(str(model.name))!r}, but Keras 3 passes the outer call's training "
                f"to every layer (keras-team/keras#20285): under fit its {len(norms)} trainable "
                "BatchNormalization layers normalize by the batch and move their statistics; "
                "freeze them (layer.trainable = False) to keep them in inference mode"
            )
    return out


def stale(model: Any) -> list[Any]:
    """Trainable weights ``fit`` does not train: made trainable after its train step was
    built (``layer.trainable = True`` after ``fit``, without ``compile()`` again), so the
    step's variable list, and its optimizer's, leaves them out."""
    optimizer = getattr(model, "optimizer", None)
    if getattr(model, "train_function", None) is None or not getattr(optimizer, "built", False):
        return []
    known = {id(v) for v in getattr(optimizer, "_trainable_variables", ())}
    if not known:
        return []
    return [v for v in model.trainable_variables if id(v) not in known]


def _stale_notes(model: Any) -> list[str]:
    late = stale(model)
    if not late:
        return []
    names = ", ".join(printable(str(getattr(v, "path", v.name))) for v in late[:3])
    more = f" and {len(late) - 3} more" if len(late) > 3 else ""
    name = printable(str(getattr(model, "name", "the model")))
    return [
        f"{len(late)} variables became trainable after fit built its train step ({names}"
        f"{more}): they get gradients, but {name}.fit keeps the variable list it was built "
        f"with and never updates them; call {name}.compile(...) again after changing "
        "trainable"
    ]


def restored_notes(restored: Sequence[tv.Chosen]) -> list[str]:
    """One note for the variables ``tf.saved_model.load`` restored that no Keras object holds
    (a signature called in a ``Lambda`` layer, or straight from the loss)."""
    if not restored:
        return []
    names = ", ".join(c.name for c in restored[:3])
    more = f" and {len(restored) - 3} more" if len(restored) > 3 else ""
    count = f"{len(restored)} variable{'s' if len(restored) != 1 else ''}"
    return [
        f"{count} of a SavedModel ({names}{more}, restored at {restored[0].source}) are read "
        "by the losses but held by no Keras model or layer (a signature called in a Lambda "
        "layer?): whatever gradients they get, model.fit and an optimizer given "
        "model.trainable_variables never update them; keras.layers.TFSMLayer tracks every "
        "variable the signature reads"
    ]


def _untracked_notes(
    tf: Any, registry: tv.Registry, model: Any, chosen: Sequence[tv.Chosen]
) -> list[str]:
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


def _tfsm_notes(model: Any) -> list[str]:
    """Per ``TFSMLayer``: the endpoint it calls, its variables, and the ones the SavedModel
    had listed as non-trainable that it trains."""
    import keras

    cls = getattr(keras.layers, "TFSMLayer", None)
    out: list[str] = []
    with contextlib.suppress(Exception):  # a half-built model: nothing to say
        for layer in model._flatten_layers(include_self=False, recursive=True):
            if cls is None or not isinstance(layer, cls):
                continue
            weights = list(layer.variables)
            trainable = [w for w in weights if w.trainable and layer.trainable]
            training = layer.call_training_endpoint
            said = (
                f"training=True calls endpoint {training!r}"
                if training
                else "training=True calls the same endpoint (no call_training_endpoint): "
                "Dropout and BatchNormalization run as they were exported"
            )
            out.append(
                f"TFSMLayer {printable(str(layer.name))!r} calls endpoint "
                f"{printable(str(layer.call_endpoint))!r} of {printable(str(layer.filepath))}; "
                f"it tracks {len(weights)} variables ({len(trainable)} trainable); {said}"
            )
            listed = getattr(layer._reloaded_obj, "non_trainable_variables", None) or []
            frozen = {v.ref() for v in listed}
            again = [w for w in trainable if getattr(w, "_value", w).ref() in frozen]
            if again:
                names = ", ".join(printable(str(w.path)) for w in again[:3])
                more = ", ..." if len(again) > 3 else ""
                out.append(
                    f"TFSMLayer {printable(str(layer.name))!r} trains {len(again)} variables "
                    f"the SavedModel lists as non-trainable ({names}{more}): their tf.Variables "
                    "say trainable, so fine-tuning through it trains what the saved model had "
                    "frozen; set their trainable to False to keep them"
                )
    return out
