"""Ground truth for the gradflow benchmark: what bare TensorFlow (or JAX) returned.

Each program calls these hooks next to its own gradient calls. They do nothing unless the
environment variable GRADFLOW_TRUTH names a file; then each hook appends one JSON line to it:
per source of a gradient call, what the framework itself returned there: "none" (no gradient),
"nan" (a NaN or an infinity), "zero" (every element exactly 0) or "ok". A hook never changes
what the program computes: it reads the gradients the program already has (a TensorFlow 1
graph's through the program's own session; a traced function's through a host callback in the
same graph), or, for a train step that Keras runs (fit), wraps the optimizer's apply_gradients,
the place the step hands its gradients over.

    record(grads, sources)                   after grads = tape.gradient(loss, sources)
    record(grads, sources, session=s, feed_dict=f)   TensorFlow 1: grads are graph tensors
    record(grads_and_vars)                   a list of (gradient, variable) pairs
    graph(loss)                              TensorFlow 1, before a minimize() that may raise:
                                             tf.gradients' None-ness (values "unknown")
    keras_fit(model)                         after model.compile(...): fit's train step
    snapshot(variables) ... moved()          which trainable variables training never moved
                                             (session=s in TensorFlow 1)
    record_jax(grads, names)                 Keras on JAX: jax.grad's leaves (no None there)

Without GRADFLOW_TRUTH every hook returns at once: the program is the user's own.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

PATH = os.environ.get("GRADFLOW_TRUTH")
_snapshots: list[tuple[list[Any], list[Any]]] = []


def _site(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def _write(entry: dict[str, Any]) -> None:
    assert PATH is not None
    with open(PATH, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry) + "\n")


def _name(source: Any) -> str:
    for attribute in ("path", "name"):
        name = getattr(source, attribute, None)
        if isinstance(name, str):
            return name.split(":")[0]
    return "tensor"


def _status(value: Any) -> str:
    import numpy as np

    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        return "nan"
    return "zero" if not np.any(array) else "ok"


def _dense(grad: Any) -> Any:
    values = getattr(grad, "values", None)  # IndexedSlices: its values are its elements
    return grad if values is None or not hasattr(grad, "indices") else values


def record(grads: Any, sources: Any = None, *, session: Any = None, feed_dict: Any = None,
           site: str | None = None) -> None:  # fmt: skip
    """One gradient call: ``grads`` as the program got them, for ``sources`` (or pairs)."""
    if not PATH:
        return
    if sources is None:
        pairs = list(grads)
        grads, sources = [g for g, _ in pairs], [v for _, v in pairs]
    elif not isinstance(sources, (list, tuple)):
        grads, sources = [grads], [sources]
    grads, sources = list(grads), list(sources)
    site = site or _site()
    names = [_name(s) for s in sources]
    present = [i for i, g in enumerate(grads) if g is not None]
    statuses = ["none"] * len(grads)
    if session is not None:  # TensorFlow 1: the program's own session evaluates them
        values = session.run([_dense(grads[i]) for i in present], feed_dict=feed_dict)
        for i, value in zip(present, values):
            statuses[i] = _status(value)
        _write({"site": site, "sources": dict(zip(names, statuses))})
        return
    import tensorflow as tf

    if tf.executing_eagerly():
        for i in present:
            statuses[i] = _status(_dense(grads[i]))
        _write({"site": site, "sources": dict(zip(names, statuses))})
        return
    # Inside a traced function: None-ness is known now; values when the graph runs.
    def write(*values: Any) -> Any:
        import numpy as np

        done = list(statuses)
        for i, value in zip(present, values):
            done[i] = _status(value)
        _write({"site": site, "sources": dict(zip(names, done))})
        return np.int32(0)

    if not present:
        _write({"site": site, "sources": dict(zip(names, statuses))})
        return
    tf.numpy_function(write, [tf.convert_to_tensor(_dense(grads[i])) for i in present],
                      tf.int32, stateful=True)  # fmt: skip


def graph(loss: Any, variables: Any = None) -> None:
    """TensorFlow 1: which variables tf.gradients gives no gradient (the graph's None-ness,
    known without running it: for a program whose minimize() raises before any session)."""
    if not PATH:
        return
    import tensorflow as tf

    variables = list(variables or tf.compat.v1.trainable_variables())
    grads = tf.compat.v1.gradients(loss, variables)
    statuses = ["none" if g is None else "unknown" for g in grads]
    _write({"site": _site(), "sources": dict(zip([_name(v) for v in variables], statuses))})


def keras_fit(model: Any) -> None:
    """After ``model.compile``: what the train step of ``fit`` hands the optimizer."""
    if not PATH:
        return
    optimizer = model.optimizer
    import keras

    if keras.backend.backend() == "jax":  # Keras' JAX train step: stateless_apply(..., grads, ...)
        _keras_fit_jax(model)
        return
    apply = optimizer.apply_gradients

    def apply_gradients(grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        pairs = list(grads_and_vars)
        record(pairs, site="fit")
        return apply(pairs, *args, **kwargs)

    optimizer.apply_gradients = apply_gradients


def _keras_fit_jax(model: Any) -> None:
    import jax

    optimizer = model.optimizer
    apply = optimizer.stateless_apply

    def stateless_apply(optimizer_variables: Any, grads: Any, trainable_variables: Any) -> Any:
        names = [_name(v) for v in model.trainable_variables]

        def write(*values: Any) -> None:
            _write({"site": "fit", "sources": {n: _status(v) for n, v in zip(names, values)}})

        jax.debug.callback(write, *grads)
        return apply(optimizer_variables, grads, trainable_variables)

    optimizer.stateless_apply = stateless_apply


def _values(variables: list[Any], session: Any) -> list[Any]:
    import numpy as np

    if session is not None:
        return [np.array(value, copy=True) for value in session.run(variables)]
    return [np.array(v.numpy(), copy=True) for v in variables]


def snapshot(variables: Any, *, session: Any = None) -> None:
    """Before training: the trainable variables whose values ``moved`` compares."""
    if not PATH:
        return
    variables = list(variables)
    _snapshots.append((variables, _values(variables, session)))


def moved(*, session: Any = None) -> None:
    """After training: each variable of the last ``snapshot``, moved or not."""
    if not PATH or not _snapshots:
        return
    import numpy as np

    variables, before = _snapshots[-1]
    after = _values(variables, session)
    moves = {_name(v): bool(not np.array_equal(b, a)) for v, b, a in zip(variables, before, after)}
    _write({"site": _site(), "moved": moves})


def record_jax(grads: Any, names: list[str]) -> None:
    """Keras on JAX: the leaves jax.grad returned (JAX has no None: a cut path is zeros)."""
    if not PATH:
        return
    statuses = {name: _status(g) for name, g in zip(names, grads)}
    _write({"site": _site(), "sources": statuses})
