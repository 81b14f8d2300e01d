"""Bare TensorFlow's verdict on a loaded model, computed as a user's training step would.

Nothing here uses gradscope: a ``tf.GradientTape`` around the user's own loss, asked for the
gradient of every variable; a variable outside what training updates (``model.
trainable_variables``, or the list a step was built with) is ``frozen``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf


def name_of(variable: Any) -> str:
    path = getattr(variable, "path", None)
    return str(path) if path else variable.name.split(":")[0]


def verdicts(
    loss: Callable[[], Any], variables: Iterable[Any], trainable: Iterable[Any]
) -> dict[str, str]:
    """``{variable: ok | zero | none | nan | frozen}``: ``tape.gradient`` of ``loss`` for each
    of ``variables``; those not in ``trainable`` are ``frozen`` (what gradscope reports for a
    variable training does not update, whatever its gradient)."""
    variables = list(variables)
    updated = {id(getattr(v, "_value", v)) for v in trainable}
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch([getattr(v, "_value", v) for v in variables])
        value = loss()
    grads = tape.gradient(value, [getattr(v, "_value", v) for v in variables])
    out = {}
    for v, g in zip(variables, grads, strict=True):
        if id(getattr(v, "_value", v)) not in updated:
            out[name_of(v)] = "frozen"
        elif g is None:
            out[name_of(v)] = "none"
        else:
            dense = np.asarray(tf.convert_to_tensor(g))
            finite = np.isfinite(dense).all()
            out[name_of(v)] = "nan" if not finite else ("zero" if not dense.any() else "ok")
    return out


def statuses(report: Mapping[str, Any], loss: str) -> dict[str, str]:
    """gradscope's statuses of one loss of a JSON report, ``none:*`` as ``none``."""
    pairs = report["losses"][loss]["variables"]
    return {name: pair["status"].split(":")[0] for name, pair in pairs.items()}
