"""Trace a model once more, for a diagnostic pass after the main run (NaN origins, ``--numeric``).

The main run (``engine.Engine``) stays as it is: one trace, no extra ops. A diagnostic pass
builds a fresh model (``Rebuild.make``: a spec is rebuilt from its ``Spec``, deterministically;
a Python target's losses are traced again) and traces what it needs in a ``tf.function`` of
its own, with variables that Keras layers create during the trace made eagerly, as the
engine makes them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from gradscope._src import tfcompat
from gradscope._src.engine.protocol import LossEntry, Traceable, VariableEntry
from gradscope._src.engine.tf_import import import_tensorflow


def _nothing() -> AbstractContextManager[None]:
    return contextlib.nullcontext()


def placement(tf: Any, device: str | None) -> AbstractContextManager[Any]:
    """``tf.device`` for a ``--device`` (``CPU:0``, ``GPU:0``); TensorFlow's own placement
    when there is none."""
    return tf.device(f"/{device}") if device else contextlib.nullcontext()


@dataclass(frozen=True)
class Rebuild:
    """How to build the model of a run again.

    Attributes:
        make: a fresh model with the same values as the run's (before anything ran).
        dtype: ``"float64"`` when ``make`` widens the model's floating-point types, None when
            it keeps them.
        scope: entered around every trace of a model from ``make`` (a Keras dtype policy).
        fallback: a rebuild to use when this one cannot be traced (the original dtypes when
            a widened model fails: an op with no float64 kernel).
        initial: the initial values of the variables a trace of ``make()`` creates (Keras
            layers), in creation order: a widened model's layers start where the original's do.
    """

    make: Callable[[], Traceable]
    dtype: str | None = None
    scope: Callable[[], AbstractContextManager[None]] = _nothing
    fallback: Rebuild | None = None
    initial: Callable[[], list[Any]] | None = None


def handle(variable: Any) -> Any:
    """The resource handle of a ``tf.Variable`` or a Keras variable."""
    found = getattr(variable, "handle", None)
    return found if found is not None else variable.value.handle


def tf_variable(variable: Any) -> Any:
    """The ``tf.Variable`` behind a variable (a Keras variable wraps one)."""
    tf = import_tensorflow()
    if isinstance(variable, tf.Variable):
        return variable
    inner = getattr(variable, "value", None)
    return inner if isinstance(inner, tf.Variable) else variable


@dataclass
class Traced:
    """One diagnostic trace: the concrete function and what its body left behind."""

    function: Any
    model: Traceable
    variables: list[VariableEntry] = field(default_factory=list)
    created: list[Any] = field(default_factory=list)  # variables the trace created, in order
    static: dict[str, Any] = field(default_factory=dict)  # whatever the body kept


#: Called inside the trace after the model's forward pass, with its losses.
Body = Callable[[Traced, list[LossEntry]], dict[str, Any]]


def eager_variable(tf: Any, next_creator: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """A variable a trace asks for (a Keras layer building), created eagerly.

    NOTE: ``tf.function`` traces a second time whenever its first trace created a variable
    through its own creator; creating it here, outside the trace, keeps one trace.
    """
    ResourceVariable = tfcompat.get("ResourceVariable")

    try:
        with tf.init_scope():
            return ResourceVariable(**kwargs)
    except (TypeError, ValueError):  # an initial value that only exists inside the trace
        return next_creator(**kwargs)


class _Creator:
    """Creates the variables a trace asks for eagerly (see ``Engine._create_variable``);
    with ``initial``, takes their initial values from it, in creation order."""

    def __init__(self, tf: Any, traced: Traced, initial: list[Any] | None) -> None:
        self.tf, self.traced = tf, traced
        self.initial = list(initial) if initial is not None else None

    def __call__(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:

        tf = self.tf
        if self.initial:
            value = self.initial.pop(0)
            shape = kwargs.get("shape")
            if shape is None or list(tf.TensorShape(shape)) == list(value.shape):
                dtype = kwargs.get("dtype") or value.dtype
                kwargs["initial_value"] = lambda: tf.cast(value, dtype)
        variable = eager_variable(tf, next_creator, kwargs)
        self.traced.created.append(variable)
        return variable


def trace(
    model: Traceable,
    body: Body,
    *,
    device: str | None = None,
    scope: Callable[[], AbstractContextManager[None]] = _nothing,
    initial: list[Any] | None = None,
) -> Traced:
    """Trace ``body`` once in a ``tf.function``; nothing runs yet.

    Args:
        model: the fresh model the body traces (``traced.model``).
        body: called inside the trace after ``model.trace()``; returns the outputs.
        device: ``"CPU:0"``/``"GPU:0"`` or None for TensorFlow's placement.
        scope: entered around the trace (a Keras dtype policy).
        initial: initial values for the variables the trace creates, in creation order
            (a widened model's Keras layers start from the original model's values).

    Returns:
        The ``Traced`` pass; ``traced.function()`` runs it.
    """
    tf = import_tensorflow()
    traced = Traced(function=None, model=model)
    creator = _Creator(tf, traced, initial)

    def run() -> dict[str, Any]:
        with placement(tf, device), tf.variable_creator_scope(creator):
            losses, traced.variables = model.trace()
            return body(traced, losses)

    with scope():
        traced.function = tf.function(run, autograph=False).get_concrete_function()
    return traced


@contextlib.contextmanager
def kept(variables: list[Any]) -> Iterator[None]:
    """Restore every variable's value on leaving (a pass that runs ``assign`` nodes)."""
    values = [(v, tf_variable(v).read_value()) for v in variables]
    try:
        yield
    finally:
        for v, value in values:
            tf_variable(v).assign(value)


def gradients(tf: Any, loss: LossEntry, xs: list[Any], target: Any = None) -> list[Any]:
    """``tf.gradients`` of one loss as every pass asks it: its ``grad_loss`` broadcast to the
    loss's shape, its ``stop_gradients``, and None (not zero) for what gets no gradient.
    ``target``: the loss as a tensor, when the caller has converted it already."""
    target = tf.convert_to_tensor(loss.tensor) if target is None else target
    grad_ys = None
    if loss.grad_ys is not None:
        grad_ys = tf.broadcast_to(tf.constant(loss.grad_ys, target.dtype), tf.shape(target))
    return list(
        tf.gradients(
            target,
            xs,
            grad_ys=grad_ys,
            stop_gradients=loss.stop_tensors or None,
            unconnected_gradients=tf.UnconnectedGradients.NONE,
        )
    )
