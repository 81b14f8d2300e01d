"""One pass under a strategy: each loss per replica with ``strategy.run``, every replica's
gradient, their all-reduced sum (what Keras' ``apply_gradients`` uses), the one-device
gradient of the whole batch, and each replica's variables after one step.

The same code runs under ``MirroredStrategy`` (every replica in this process) and
``MultiWorkerMirroredStrategy`` (one replica per worker process); it returns plain numbers
(a ``Measurement``, JSON-ready) that ``merge`` turns into facts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from gradscope._src.distribute.shards import rows, split
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import BuildError
from gradscope._src.frontends.yaml.model import Spec

#: The learning rate of the step after which replicas' variables are compared.
STEP = 0.1

Measurement = dict[str, Any]
"""``{"devices", "shards", "pairs": {"LOSS\\x1fVAR": {"replicas", "reduced", "whole_norm",
"error", "scaled_error"}}, "spreads": {VAR: [spread, [replica, ...]]}}``; the stats are
``[norm, max |g|]`` pairs."""

KEY = "\x1f"
UPSTREAM = "\x1fgrad_loss/"  # the per-replica values that are a loss's grad_loss, not inputs


def measure(spec: Spec, strategy: Any, losses: list[str] | None = None) -> Measurement:
    """Run every loss of ``spec`` (or only ``losses``) once under ``strategy``.

    Raises:
        UsageError: an input has fewer rows than there are replicas.
        BuildError: TensorFlow refused a node.
    """
    from gradscope._src.frontends.yaml.forward.model import SpecModel

    tf = import_tensorflow()
    replicas = int(strategy.num_replicas_in_sync)
    with strategy.scope():
        model = SpecModel(spec)
        model.whole_batch = False  # a replica's loss is its shard's: grad_loss is split too
        if any(node.op == "layer" for node in spec.nodes):
            model.trace()  # Keras layers make their weights eagerly, as mirrored variables
    shards = split({n: t.numpy() for n, t in model.inputs.items()}, replicas)
    upstream = _upstream(spec, replicas)
    parts = {**shards, **upstream}
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: {n: tf.constant(s[ctx.replica_id_in_sync_group]) for n, s in parts.items()}
    )
    keys: list[tuple[str, str]] = []  # the pairs with a gradient, filled in while tracing
    names: list[str] = []  # the variables compared after a step

    def replica_fn(inputs: dict[str, Any]) -> dict[str, Any]:
        return _replica(tf, model, inputs, losses, keys, names)

    step = tf.function(lambda v: strategy.run(replica_fn, args=(v,)), autograph=False)
    try:
        out = strategy.experimental_local_results(step(values))[0]
    except BuildError as exc:
        raise _on_shares(exc) from exc
    except (tf.errors.OpError, ValueError) as exc:
        error = model.trace_error(exc)
        raise (_on_shares(error) if isinstance(error, BuildError) else error) from exc
    numbers = {k: [np.asarray(x) for x in v] for k, v in out.items()}
    whole = _whole_batch(tf, spec, keys)
    return {
        "devices": list(strategy.extended.worker_devices),
        "shards": [[n, list(r)] for n, r in rows(shards)],
        "pairs": _pairs(keys, numbers, whole, replicas),
        "spreads": _spreads(names, numbers.get("after", [])),
    }


def _on_shares(error: BuildError) -> BuildError:
    """A node's error, saying that the node saw one replica's share of the inputs."""
    note = "(with --strategy, each replica runs on its share of the inputs, split along the "
    note += "first axis)"
    return BuildError(error.location, error.field, f"{error.message} {note}")


def _replica(tf: Any, model: Any, inputs: dict[str, Any], only: list[str] | None,
             keys: list[tuple[str, str]], names: list[str]) -> dict[str, Any]:  # fmt: skip
    """The replica function: everything that reads the model runs before the first
    collective, because ``MirroredStrategy`` runs replicas as threads that switch there."""
    ctx = tf.distribute.get_replica_context()
    model.inputs = {n: v for n, v in inputs.items() if not n.startswith(UPSTREAM)}
    upstream = {n[len(UPSTREAM) :]: v for n, v in inputs.items() if n.startswith(UPSTREAM)}
    losses, variables = model.trace()
    grads: list[Any] = []
    values: list[Any] = []
    keys.clear()
    for loss, variable, grad in _gradients(tf, losses, variables, only, upstream, values):
        keys.append((loss, variable.name))
        grads.append(_dense(tf, grad))
    # every replica's loss values are computed, as training computes them: a replica whose
    # share breaks the forward pass (an index past its rows) fails here, located
    gathered: dict[str, list[Any]] = {"values": [tf.stack(values)]} if values else {}
    reduced = _all_reduce(tf, ctx, grads)
    if grads:
        gathered["local"] = [tf.stack([_stats(tf, g) for g in grads])]
    after = _after_step(tf, variables, reduced, keys)
    names[:] = list(after)
    if after:
        gathered["after"] = list(after.values())
    out = _gather(tf, ctx, gathered)
    return out | {"reduced": list(reduced)} if grads else out


def _all_reduce(tf: Any, ctx: Any, grads: list[Any]) -> list[Any]:
    """Each gradient summed over the replicas, as Keras' ``apply_gradients`` sums them: one
    ``all_reduce`` per dtype (a collective takes one), a complex gradient as its real and
    imaginary parts (collectives take no complex dtype)."""
    pieces: list[Any] = []
    for g in grads:
        pieces += [tf.math.real(g), tf.math.imag(g)] if g.dtype.is_complex else [g]
    groups: dict[str, list[int]] = {}
    for i, piece in enumerate(pieces):
        groups.setdefault(piece.dtype.name, []).append(i)
    summed: list[Any] = [None] * len(pieces)
    for indices in groups.values():
        done = ctx.all_reduce(tf.distribute.ReduceOp.SUM, [pieces[i] for i in indices])
        for i, total in zip(indices, done, strict=True):
            summed[i] = total
    taken = iter(summed)
    return [tf.complex(next(taken), next(taken)) if g.dtype.is_complex else next(taken)
            for g in grads]  # fmt: skip


def _gather(tf: Any, ctx: Any, tensors: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Every replica's copy of each of ``tensors`` (a first axis of replicas), in one
    ``all_gather``: each is cast to float64 (exact for every floating dtype) and flattened
    into one vector. One collective per tensor cost ~0.4 s of tracing each (a spec with
    three variables: six of them, 2.6 s of its 5 s)."""
    parts = [(key, t) for key, ts in tensors.items() for t in ts]
    if not parts:
        return {}
    flat = [tf.reshape(tf.cast(t, tf.float64), [-1]) for _, t in parts]
    sizes = [tf.size(f) for f in flat]
    every = ctx.all_gather(tf.concat(flat, 0)[None], axis=0)  # [replicas, total]
    out: dict[str, list[Any]] = {}
    for (key, t), piece in zip(parts, tf.split(every, tf.stack(sizes), axis=1), strict=True):
        shape = tf.concat([tf.shape(every)[:1], tf.shape(t)], 0)
        out.setdefault(key, []).append(tf.reshape(piece, shape))
    return out


def _upstream(spec: Spec, replicas: int) -> dict[str, list[np.ndarray]]:
    """Each loss's ``grad_loss`` with a first axis, split like the inputs: it is the upstream
    gradient of the loss's examples (used where the replica's loss has the shard's shape)."""
    out = {}
    for loss in spec.losses:
        array = None if loss.grad_loss is None else np.asarray(loss.grad_loss)
        if array is not None and array.ndim and array.shape[0] >= replicas:
            out[UPSTREAM + loss.name] = list(np.array_split(array, replicas, axis=0))
    return out


def _grad_ys(tf: Any, loss: Any, target: Any, shard: Any) -> Any:
    """The upstream gradient of one replica's loss: the loss's ``grad_loss`` where it fits
    the replica's loss, else the replica's slice of it."""
    if loss.grad_ys is None:
        return None
    shape = tuple(target.shape) if target.shape.is_fully_defined() else None
    fits = shape is not None and _broadcasts(np.shape(loss.grad_ys), shape) == shape
    value = tf.constant(loss.grad_ys, target.dtype) if fits or shard is None else shard
    return tf.broadcast_to(tf.cast(value, target.dtype), tf.shape(target))


def _broadcasts(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _gradients(tf: Any, losses: list[Any], variables: list[Any], only: list[str] | None,
               upstream: dict[str, Any] | None = None,
               values: list[Any] | None = None) -> Iterator[tuple[str, Any, Any]]:  # fmt: skip
    """``(loss, variable entry, gradient)`` for every pair that gets a gradient; each loss's
    value (summed, in float64) is appended to ``values``."""
    for loss in losses:
        if only is not None and loss.name not in only:
            continue
        target = tf.convert_to_tensor(loss.tensor)
        if values is not None:
            real = tf.math.real(target) if target.dtype.is_complex else target
            values.append(tf.reduce_sum(tf.cast(real, tf.float64)))
        wanted = [v for v in variables if v.trainable and loss.includes(v.name)]
        if not wanted:
            continue
        grad_ys = _grad_ys(tf, loss, target, (upstream or {}).get(loss.name))
        grads = tf.gradients(
            target, [v.variable for v in wanted], grad_ys=grad_ys,
            stop_gradients=loss.stop_tensors or None,
        )  # fmt: skip
        for variable, grad in zip(wanted, grads, strict=True):
            if grad is not None:
                yield loss.name, variable, grad


def _dense(tf: Any, grad: Any) -> Any:
    return tf.convert_to_tensor(grad) if isinstance(grad, tf.IndexedSlices) else grad


def _stats(tf: Any, grad: Any) -> Any:
    """``[norm, max |g|]`` in float64 (``max |g|`` is NaN or Inf exactly when an element is)."""
    g = tf.cast(tf.abs(grad) if grad.dtype.is_complex else grad, tf.float64)
    largest = tf.reduce_max(tf.abs(g)) if g.shape.num_elements() else tf.constant(0.0, tf.float64)
    return tf.stack([tf.sqrt(tf.reduce_sum(tf.square(g))), largest])


def _after_step(tf: Any, variables: list[Any], reduced: list[Any],
                keys: list[tuple[str, str]]) -> dict[str, Any]:  # fmt: skip
    """Each floating variable's local copy (as the forward pass left it: an ``assign`` may
    have written it) after one step of gradient descent on the sum of the losses with the
    all-reduced gradient: every replica applies the same update, as Keras does."""
    total: dict[str, Any] = {}
    for (_, name), grad in zip(keys, reduced, strict=True):
        total[name] = grad if name not in total else total[name] + grad
    out = {}
    for v in variables:
        value = tf.convert_to_tensor(v.variable)
        if not value.dtype.is_floating:
            continue
        step = total.get(v.name)
        out[v.name] = value if step is None else value - tf.cast(STEP * step, value.dtype)
    return out


def _whole_batch(tf: Any, spec: Spec, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """The one-device gradient of every pair in ``keys`` on the whole batch (a model built
    again from the spec's seed outside the strategy, so its variables start equal)."""
    from gradscope._src.frontends.yaml.forward.model import SpecModel

    model = SpecModel(spec)
    wanted = {loss for loss, _ in keys}

    def body() -> dict[str, Any]:
        losses, variables = model.trace()
        return {
            f"{loss}{KEY}{variable.name}": _dense(tf, grad)
            for loss, variable, grad in _gradients(tf, losses, variables, sorted(wanted))
        }

    out = tf.function(body, autograph=False)()
    return {tuple(k.split(KEY, 1)): np.asarray(v) for k, v in out.items()}


def _pairs(keys: list[tuple[str, str]], numbers: dict[str, list[np.ndarray]],
           whole: dict[tuple[str, str], Any], replicas: int) -> dict[str, Any]:  # fmt: skip
    if not keys:
        return {}
    local = numbers["local"][0]  # [replicas, pairs, 2]
    out: dict[str, Any] = {}
    for index, key in enumerate(keys):
        reduced = numbers["reduced"][index]
        base = whole.get(key)
        entry: dict[str, Any] = {
            "replicas": [[float(x) for x in local[r, index]] for r in range(replicas)],
            "reduced": [float(np.linalg.norm(_wide(reduced))),
                        float(np.max(np.abs(reduced))) if reduced.size else 0.0],
            "whole_norm": None, "error": None, "scaled_error": None,
        }  # fmt: skip
        if base is not None:
            entry.update(_agreement(reduced, base, replicas))
        out[f"{key[0]}{KEY}{key[1]}"] = entry
    return out


def _agreement(reduced: np.ndarray, whole: np.ndarray, replicas: int) -> dict[str, float | None]:
    r, w = _wide(reduced), _wide(whole)
    norm = float(np.linalg.norm(w))
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(w))):
        return {"whole_norm": norm if np.isfinite(norm) else None, "error": None,
                "scaled_error": None}  # fmt: skip
    floor = max(norm, 1e-12)
    return {
        "whole_norm": norm,
        "error": float(np.linalg.norm(r - w)) / floor,
        "scaled_error": float(np.linalg.norm(r - replicas * w)) / floor,
    }


def _wide(a: np.ndarray) -> np.ndarray:
    """``a`` in double precision, complex kept complex (its norm is then its modulus's)."""
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _gap(a: np.ndarray, b: np.ndarray) -> float:
    """The largest difference of two copies; NaN where both are NaN is no difference (a
    ``nan`` gradient is a problem of its own), NaN in only one is an infinite one."""
    if not a.size:
        return 0.0
    both = np.isnan(a) & np.isnan(b)
    gap = np.where(both, 0.0, np.abs(a.astype(np.float64) - b.astype(np.float64)))
    return float(np.max(np.where(np.isnan(gap), np.inf, gap)))


def _spreads(names: list[str], after: list[np.ndarray]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, copies in zip(names, after, strict=True):
        gaps = [_gap(copies[r], copies[0]) for r in range(copies.shape[0])]
        differing = [r for r, gap in enumerate(gaps) if gap > 0]
        out[name] = [max(gaps), differing]
    return out
