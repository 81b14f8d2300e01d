"""One pass of a Python target under a strategy: its function called again under
``strategy.scope()`` (so the variables it makes are mirrored), every loss per replica with
``strategy.run``, and every replica's gradient.

A target's losses are zero-argument callables closed over their data (contract section 3):
there is no batch gradscope could split. Each replica so computes the whole loss, and the
pair shows the replicas' all-reduced mean, which is the one-device gradient whenever the
replicas agree; the report says so. What the pass finds is what differs between replicas
(random ops, a dropout mask, a replica-dependent branch: ``replica-mismatch``) and what
breaks under a strategy at all (a loss that cannot run in a replica context).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from gradscope._src.distribute.replica import KEY, Measurement
from gradscope._src.distribute.replica import _dense as dense
from gradscope._src.distribute.replica import _gradients as gradients
from gradscope._src.distribute.replica import _stats as stats
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import TargetError

#: The note every Python target's distributed report carries.
WHOLE = (
    "--strategy: a Python target's losses are closed over their data, which cannot be split "
    "across replicas: each replica computed the whole loss, and each pair shows the "
    "replicas' all-reduced mean (the one-device gradient when they agree)"
)
#: ... and the one where its variables could not be made under the strategy's scope.
UNMIRRORED = (
    "--strategy: the target's variables were made outside strategy.scope() (a Target "
    "object, or at import time), so they are not mirrored: every replica read the same copy"
)


def one_device(frontend: Any) -> list[tuple[str, Any]]:
    """The one-device run's variables, ``(name, value)`` in report order: what the build
    across replicas is named after and starts from."""
    return [(c.name, c.variable.numpy()) for c in frontend.model.chosen]


def measure(
    obj: Any, before: list[tuple[str, Any]], strategy: Any, losses: list[str] | None
) -> tuple[Measurement, list[str]]:
    """Every loss of the target ``obj`` (or only ``losses``) once per replica under
    ``strategy``, with the pairs named as in the one-device run (``before``, from
    ``one_device``); the notes the report needs. The same code runs in this process
    (``mirrored``) and in each worker (``multiworker``).

    Raises:
        TargetError: the target, built again under the strategy's scope, has other
            variables than before, or a loss fails inside a replica.
    """
    from gradscope._src.frontends.python.model import PythonModel
    from gradscope._src.frontends.python.resolve import resolve
    from gradscope._src.frontends.python.variables import Registry

    tf = import_tensorflow()
    registry = Registry(tf)
    with strategy.scope():
        resolved = resolve(obj, registry.recording)
    model = PythonModel(resolved, registry, None if losses is None else set(losses))
    keys: list[tuple[str, str]] = []
    chosen: list[Any] = []
    replica_fn = _replica_fn(tf, model, losses, keys, chosen)
    step = tf.function(lambda: strategy.run(replica_fn), autograph=False)
    try:
        step.get_concrete_function()  # traced: the variables the losses read are known
        names = _names([name for name, _ in before], chosen, resolved.label)
        _copy([value for _, value in before], chosen)
        out = strategy.experimental_local_results(step())[0]
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        raise TargetError(f"{resolved.label}: --strategy: a loss failed inside a replica: "
                          f"{str(exc).splitlines()[0]}") from exc  # fmt: skip
    numbers = {k: [np.asarray(x) for x in v] for k, v in out.items()}
    mirrored = all(isinstance(c.variable, tf.distribute.DistributedValues) for c in chosen)
    notes = [WHOLE] + ([] if mirrored else [UNMIRRORED])
    notes += [f"--strategy: loss {name!r} runs only eagerly (its trace failed), so it was not "
              "run across replicas" for name in model.failed]  # fmt: skip
    measured = {
        "devices": list(strategy.extended.worker_devices),
        "shards": [],
        "pairs": _pairs(keys, names, numbers, int(strategy.num_replicas_in_sync)),
        "spreads": {},
        "untraced": list(model.failed),
    }
    return measured, notes


def _replica_fn(tf: Any, model: Any, losses: list[str] | None, keys: list[tuple[str, str]],
                chosen: list[Any]) -> Callable[[], dict[str, Any]]:  # fmt: skip
    """The function ``strategy.run`` calls: every loss of ``model`` traced in the replica,
    each pair's gradient stats gathered from every replica and the gradients' mean; ``keys``
    and ``chosen`` are filled in as it traces."""

    def replica_fn() -> dict[str, Any]:
        ctx = tf.distribute.get_replica_context()
        entries, found = model.trace()
        chosen[:] = _containers(found)
        keys.clear()
        grads = []
        for loss, variable, grad in gradients(tf, entries, list(chosen), losses):
            if loss not in model.failed:  # a failed loss's stand-in is a constant
                keys.append((loss, variable.name))
                grads.append(dense(tf, grad))
        if not grads:
            return {}
        local = tf.stack([stats(tf, g) for g in grads])[None]
        reduced = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        return {"local": [ctx.all_gather(local, axis=0)], "reduced": list(reduced)}

    return replica_fn


def _containers(chosen: list[Any]) -> list[Any]:
    """The variables a replica's trace chose, each replica's copy of a mirrored variable
    replaced by the mirrored variable (the trace sees the copies it reads, every replica's
    so far), once, in order."""
    out, seen = [], set()
    for entry in chosen:
        variable = _container(entry.variable) or entry.variable
        if id(variable) not in seen:
            seen.add(id(variable))
            out.append(dataclasses.replace(entry, variable=variable))
    return out


def _container(variable: Any) -> Any:
    """The mirrored variable ``variable`` is one replica's copy of, else None (TensorFlow
    keeps the link on a resource variable's handle: ``DistributedVariable.__init__``)."""
    for owner in (variable, getattr(variable, "handle", None)):
        link = getattr(owner, "_distributed_container", None)
        if link is not None:
            return link()
    return None


def _names(before: list[str], mirrored: list[Any], label: str) -> dict[str, str]:
    """The mirrored build's variable names -> the one-device run's, by position (Keras
    numbers a second build's layers afresh: ``dense_1`` for ``dense``)."""
    after = [c.name for c in mirrored]
    if len(before) != len(after):
        raise TargetError(
            f"{label}: --strategy: built again under the strategy's scope, the target has "
            f"{len(after)} variable(s) where it had {len(before)}; a target run across "
            "replicas must build the same model each time it is called"
        )
    return dict(zip(after, before, strict=True))


def _copy(before: list[Any], after: list[Any]) -> None:
    """The one-device run's variable values into the mirrored build's (every replica's copy):
    a second build starts from other random initial values."""
    for value, new in zip(before, after, strict=True):
        if tuple(np.shape(value)) == tuple(new.variable.shape):
            new.variable.assign(value)


def _pairs(keys: list[tuple[str, str]], names: dict[str, str],
           numbers: dict[str, list[np.ndarray]], replicas: int) -> dict[str, Any]:  # fmt: skip
    if not keys:
        return {}
    local = numbers["local"][0]  # [replicas, pairs, 2]
    out: dict[str, Any] = {}
    for index, (loss, variable) in enumerate(keys):
        reduced = numbers["reduced"][index].astype(np.float64)
        out[f"{loss}{KEY}{names[variable]}"] = {
            "replicas": [[float(x) for x in local[r, index]] for r in range(replicas)],
            "reduced": [float(np.linalg.norm(reduced)),
                        float(np.max(np.abs(reduced))) if reduced.size else 0.0],
            "whole_norm": None, "error": None, "scaled_error": None,
        }  # fmt: skip
    return out
