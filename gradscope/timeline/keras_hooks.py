"""The graph side of the Keras ``Monitor``: every K steps, copy the train step's gradients aside.

Keras 3's TensorFlow trainer computes the gradients in ``train_step`` and hands them to
``optimizer.apply`` (``apply_gradients`` calls it; so do custom ``train_step``s). The hooks
wrap, on the model's and optimizer's instances only:

- ``optimizer.apply``: sees the exact gradients (None included) that train the model;
- ``model.compute_loss``: sees the total loss and, through the compiled loss's per-output
  functions and ``model.losses``, each part of it (several outputs, ``add_loss``,
  regularizers);
- ``model.train_step``: runs the step under an outer persistent tape and then, in a
  ``tf.cond`` on ``optimizer.iterations % every == 0``, copies the gradients into stash
  variables and takes each loss part's gradient from the outer tape.

Nothing of the training changes: the same ops compute the same update, and the recording
runs only on the steps it is due (a tape inside ``tf.function`` costs nothing at run time).
Per-loss gradients are taken from the tape the step already recorded, so dropout masks and
batch-norm statistics are the step's own. The stash lives in plain ``tf.Variable``s created
outside the model (``tf.init_scope``), so it is never saved with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf


@dataclass
class _Trace:
    """What one trace of the train step saw (symbolic tensors in graph mode)."""

    applied: list[tuple[Any, Any]] = field(default_factory=list)  # (gradient, variable)
    loss: Any = None
    parts: list[tuple[str, Any]] = field(default_factory=list)  # (loss name, weighted value)


class Hooks:
    """Installs the wrappers on ``model`` and reads back what the due steps stashed."""

    def __init__(self, model: Any, every: int, per_loss: bool = True, raw: bool = False) -> None:
        self.model, self.every, self.per_loss, self.raw = model, int(every), per_loss, raw
        self.optimizer = model.optimizer
        with tf.init_scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="gradscope_step")
            self.loss = tf.Variable(
                float("nan"), dtype=tf.float32, trainable=False, name="gradscope_loss"
            )
        self.stash: dict[tuple[str, str], tf.Variable] = {}  # (loss part or "", var path), raw
        self.part_values: dict[str, tf.Variable] = {}
        self.sums: dict[
            str, tf.Variable
        ] = {}  # "total" [n, 3], "parts" [P, n, 2], "dots" [pairs, n]
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.names: list[str] = []  # paths of the variables the step applies, in order
        self.nones: set[str] = set()
        self.sparse: set[str] = set()
        self.parts: list[str] = []
        self._trace: _Trace | None = None
        self._fetch: tuple[Any, Any] | None = None
        self._saved: list[tuple[Any, str, Any]] = []
        self._install()

    # -- installing -------------------------------------------------------------------------

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING)))
        object.__setattr__(owner, name, value)

    def _install(self) -> None:
        apply, step, compute = self.optimizer.apply, self.model.train_step, self.model.compute_loss
        self._patch(
            self.optimizer,
            "apply",
            lambda grads, variables=None: self._apply(apply, grads, variables),
        )
        self._patch(self.model, "train_step", lambda data: self._train_step(step, data))
        self._patch(self.model, "compute_loss", lambda *a, **k: self._compute_loss(compute, a, k))
        compiled = getattr(self.model, "_compile_loss", None)
        if self.per_loss and compiled is not None and hasattr(compiled, "_flat_losses"):
            if compiled.built:
                self._wrap_flat_losses(compiled)
            else:
                build = compiled.build

                def built(*args: Any) -> None:  # Keras builds the compiled loss in the trace
                    build(*args)
                    self._wrap_flat_losses(compiled)

                self._patch(compiled, "build", built)

    def remove(self) -> None:
        """Put every wrapped attribute back as it was."""
        for owner, name, old in reversed(self._saved):
            if old is _MISSING:
                object.__delattr__(owner, name)
            else:
                object.__setattr__(owner, name, old)
        self._saved.clear()

    def _wrap_flat_losses(self, compiled: Any) -> None:
        flat = list(compiled._flat_losses)
        wrapped = [
            entry._replace(
                loss=self._part(entry.loss, entry.name or f"output_{i}", entry.loss_weights)
            )
            for i, entry in enumerate(flat)
        ]
        self._patch(compiled, "_flat_losses", wrapped)

    def _part(self, fn: Any, name: str, weight: Any) -> Any:
        def loss(*args: Any, **kwargs: Any) -> Any:
            value = fn(*args, **kwargs)
            if self._trace is not None:
                weighted = value if weight is None else tf.cast(value, tf.float32) * weight
                self._trace.parts.append((name, weighted))
            return value

        return loss

    # -- inside the train step --------------------------------------------------------------

    def _apply(self, apply: Any, grads: Any, variables: Any) -> Any:
        if self._trace is not None and variables is not None:
            self._trace.applied.extend(zip(list(grads), list(variables), strict=False))
        return apply(grads, variables)

    def _compute_loss(self, compute: Any, args: Any, kwargs: Any) -> Any:
        total = compute(*args, **kwargs)
        if self._trace is not None and kwargs.get("training", True):
            self._trace.loss = total
            added = [tf.reduce_sum(tf.cast(x, tf.float32)) for x in self.model.losses]
            if added and self._trace.parts:
                self._trace.parts.append(("added_losses", tf.add_n(added)))
        return total

    def _train_step(self, step: Any, data: Any) -> Any:
        self._trace = trace = _Trace()
        try:
            with tf.GradientTape(persistent=True) as tape:
                logs = step(data)
        finally:
            self._trace = None
        if trace.loss is None and isinstance(logs, dict) and "loss" in logs:
            trace.loss = logs["loss"]  # a custom train_step: the loss it reports
        iterations = tf.cast(self.optimizer.iterations, tf.int64)
        tf.cond(
            tf.equal(iterations % self.every, 0),
            lambda: self._store(trace, tape, iterations),
            lambda: tf.constant(False),
        )
        return logs

    def _store(self, trace: _Trace, tape: tf.GradientTape, iterations: Any) -> Any:
        """On a due step: each gradient reduced to (sum of squares, zeros) in float64, the
        weight's sum of squares, per loss part the same and the dot products between parts
        (and, with ``raw``, the gradients themselves for histograms)."""
        names, totals, variables = [], [], [v for _, v in trace.applied]
        for grad, variable in trace.applied:
            path = _path(variable)
            names.append(path)
            self.shapes[path] = tuple(int(d) for d in variable.shape)
            if isinstance(grad, tf.IndexedSlices):
                self.sparse.add(path)
            if grad is None:
                self.nones.add(path)
            elif self.raw:
                self._stash("", path, variable).assign(tf.convert_to_tensor(grad))
            totals.append(tf.concat([_reduce(grad), _reduce(variable)[:1]], 0))
        self.names = names
        self._sum("total", tf.stack(totals)).assign(tf.stack(totals))
        if trace.loss is not None:
            self.loss.assign(tf.cast(trace.loss, tf.float32))
        parts = trace.parts if len(trace.parts) > 1 else []
        self.parts = [name for name, _ in parts]
        flats = []
        for name, value in parts:
            self._value(name).assign(tf.cast(value, tf.float32))
            flats.append([_flat(g) for g in tape.gradient(value, variables)])
        if flats:
            reduced = tf.stack([tf.stack([_reduce(g) for g in grads]) for grads in flats])
            self._sum("parts", reduced).assign(reduced)
            dots = tf.stack(
                [
                    tf.stack([_dot(a, b) for a, b in zip(flats[i], flats[j], strict=True)])
                    for i in range(len(flats))
                    for j in range(i + 1, len(flats))
                ]
            )
            self._sum("dots", dots).assign(dots)
        self.step.assign(iterations)
        return tf.constant(True)

    def _sum(self, name: str, like: Any) -> tf.Variable:
        if name not in self.sums or tuple(self.sums[name].shape) != tuple(like.shape):
            with tf.init_scope():
                self.sums[name] = tf.Variable(
                    tf.zeros(like.shape, tf.float64), trainable=False, name=f"gradscope_{name}"
                )
        return self.sums[name]

    def _stash(self, part: str, path: str, variable: Any) -> tf.Variable:
        key = (part, path)
        if key not in self.stash:
            with tf.init_scope():
                self.stash[key] = tf.Variable(
                    tf.zeros(variable.shape, variable.dtype),
                    trainable=False,
                    name="gradscope_stash",
                )
        return self.stash[key]

    def _value(self, part: str) -> tf.Variable:
        if part not in self.part_values:
            with tf.init_scope():
                self.part_values[part] = tf.Variable(0.0, trainable=False, name="gradscope_part")
        return self.part_values[part]

    # -- read back (eager, from the callback) -----------------------------------------------

    def fetch(self) -> Snapshot:
        """The last due step's numbers, as numpy (small: a few values per variable)."""
        raw = {k: v.numpy() for k, v in self.stash.items()} if self.raw else {}
        return Snapshot(
            {k: v.numpy() for k, v in self.sums.items()},
            {k: float(v.numpy()) for k, v in self.part_values.items()},
            float(self.loss.numpy()),
            raw,
        )


@dataclass(frozen=True)
class Snapshot:
    """A due step: ``sums`` ("total" [n, 3], "parts" [P, n, 2], "dots" [pairs, n]), the loss
    parts' values, the loss, and with ``raw`` the gradients by (part or "", path)."""

    sums: dict[str, Any]
    parts: dict[str, float]
    loss: float
    raw: dict[tuple[str, str], Any]


def _flat(gradient: Any) -> Any:
    """A gradient as one float64 vector, None kept."""
    if gradient is None:
        return None
    return tf.cast(tf.reshape(tf.convert_to_tensor(gradient), [-1]), tf.float64)


def _reduce(tensor: Any) -> Any:
    """``[sum of squares, zero elements]`` in float64 (NaN, NaN for no gradient)."""
    flat = tensor if isinstance(tensor, tf.Tensor) and tensor.dtype == tf.float64 else _flat(tensor)
    if flat is None:
        return tf.constant([float("nan"), float("nan")], tf.float64)
    zeros = tf.cast(tf.size(flat, tf.int64) - tf.math.count_nonzero(flat), tf.float64)
    return tf.stack([tf.reduce_sum(tf.square(flat)), zeros])


def _dot(a: Any, b: Any) -> Any:
    if a is None or b is None:
        return tf.constant(float("nan"), tf.float64)
    return tf.reduce_sum(a * b)


_MISSING = object()


def _path(variable: Any) -> str:
    """A variable's name as reports give it: Keras ``path``, else ``name`` without ``:0``."""
    path = getattr(variable, "path", None)
    if path:
        return str(path)
    return str(variable.name).removesuffix(":0")
