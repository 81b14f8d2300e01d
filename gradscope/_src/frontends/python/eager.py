"""Each loss run eagerly under a ``tf.GradientTape``, as an eager training loop would run it.

The traced analysis is the main answer; this pass checks it (a variable whose gradient is
None one way and not the other is reported) and answers the losses that cannot be traced
(a ``.numpy()`` call). It runs once per loss after the trace, so a loss that creates its
variables on every call shows up as creating some here too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradscope._src.engine.retrace import placement
from gradscope._src.frontends.python import frames
from gradscope._src.frontends.python.ending import TargetEnded
from gradscope._src.frontends.python.model import describe
from gradscope._src.frontends.python.variables import Chosen, Registry, tf_variable
from gradscope._src.results.facts import Comparison


@dataclass(frozen=True)
class GradStats:
    """What one eager gradient looked like."""

    norm: float
    finite: bool
    zero: bool
    sparse: bool


@dataclass
class EagerLoss:
    """One loss run eagerly: its value, per variable its gradient (None: no gradient)."""

    value: float | None = None
    shape: tuple[int | None, ...] = ()
    grads: dict[Any, GradStats | None] = field(default_factory=dict)  # by tf.Variable.ref()
    reads: set[Any] = field(default_factory=set)  # trainable variables the loss read
    created: list[tuple[Any, str]] = field(default_factory=list)
    returned: str | None = None  # what the loss returned when not a tensor
    error: BaseException | None = None


@dataclass(frozen=True)
class Options:
    """How a loss is differentiated, as the target asks (``Target.grad_loss``, ...)."""

    grad_loss: Any = None
    unconnected: str = "none"


def options_of(target: Any, name: str) -> Options:
    """A target's differentiation options for loss ``name``."""
    return Options((target.grad_loss or {}).get(name), target.unconnected_gradients)


def _gradients(
    tf: Any,
    registry: Registry,
    fn: Callable[[], Any],
    variables: Sequence[Any],
    out: EagerLoss,
    options: Options | None = None,
) -> list[Any] | None:
    """Call ``fn`` under a tape and differentiate it; None when it raised (``out.error``)."""
    options = options or Options()
    with registry.collect() as created:
        try:
            with tf.GradientTape() as tape:
                value = frames.call_user(fn)
                # Read inside the tape: a loss that returns a tf.Variable itself is read here,
                # as the user's own `tape.gradient(variable, ...)` reads it.
                tensor = _tensor(tf, value, out)
        except TargetEnded:
            raise
        except Exception as exc:  # reported as a note by the caller, never hidden
            out.error = exc
            return None
    out.created = created
    out.reads = {v.ref() for v in tape.watched_variables()}
    if tensor is None:
        return None
    out.shape = tuple(tensor.shape.as_list())
    if not (tensor.dtype.is_floating or tensor.dtype.is_complex):
        return [None] * len(variables)
    real = tf.math.real(tensor) if tensor.dtype.is_complex else tensor
    out.value = float(tf.reduce_sum(tf.cast(real, tf.float64)))
    upstream = None
    if options.grad_loss is not None:
        upstream = tf.broadcast_to(tf.constant(options.grad_loss, tensor.dtype), tf.shape(tensor))
    unconnected = tf.UnconnectedGradients(options.unconnected)
    return list(
        tape.gradient(
            tensor, list(variables), output_gradients=upstream, unconnected_gradients=unconnected
        )
    )


def _tensor(tf: Any, value: Any, out: EagerLoss) -> Any:
    """``value`` as a tensor; None (and ``out.error``) when it is not one."""
    if not (tf.is_tensor(value) or tf_variable(tf, value) is not None):
        out.returned = describe(value)
    try:
        return tf.convert_to_tensor(value)
    except (TypeError, ValueError) as exc:
        out.error = exc
        return None


def _dense(tf: Any, grad: Any) -> Any:
    array = np.asarray(tf.convert_to_tensor(grad))
    return np.abs(array) if np.iscomplexobj(array) else array.astype(np.float64)


def _stats(tf: Any, grad: Any) -> GradStats:
    array = _dense(tf, grad)
    finite = bool(np.isfinite(array).all())
    return GradStats(
        norm=float(np.sqrt(np.sum(np.square(array)))),
        finite=finite,
        zero=finite and not array.any(),
        sparse=isinstance(grad, tf.IndexedSlices),
    )


def run_loss(
    tf: Any,
    registry: Registry,
    fn: Callable[[], Any],
    chosen: Sequence[Chosen],
    device: str | None,
    options: Options | None = None,
) -> EagerLoss:
    """One loss, eagerly: value, reads, created variables and gradient stats per variable."""
    out = EagerLoss()
    trainable = [c.variable for c in chosen if c.trainable]
    with placement(tf, device):
        grads = _gradients(tf, registry, fn, trainable, out, options)
        if grads is None:
            return out
        out.grads = {
            v.ref(): None if g is None else _stats(tf, g)
            for v, g in zip(trainable, grads, strict=True)
        }
    return out


def comparison(
    tf: Any,
    registry: Registry,
    losses: dict[str, Callable[[], Any]],
    pair: tuple[str, str],
    chosen: Sequence[Chosen],
    device: str | None,
) -> Comparison:
    """Dot products and sign agreement of two losses' eager gradients, per shared variable
    (what the engine computes in its trace, for a pair with an untraceable loss)."""
    trainable = [c for c in chosen if c.trainable]
    grads = []
    with placement(tf, device):
        for name in pair:
            found = _gradients(
                tf, registry, losses[name], [c.variable for c in trainable], EagerLoss()
            )
            grads.append(found or [None] * len(trainable))
    dots, signs = {}, {}
    for c, ga, gb in zip(trainable, grads[0], grads[1], strict=True):
        if ga is None or gb is None:
            continue
        x, y = _dense(tf, ga), _dense(tf, gb)
        dots[c.name] = float(np.sum(x * y))
        signs[c.name] = float(np.mean(1.0 - np.minimum(np.abs(np.sign(x) - np.sign(y)), 1.0)))
    return Comparison(pair[0], pair[1], dots=dots, sign_agreement=signs)
