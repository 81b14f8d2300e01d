"""The ``trainable`` flags a Keras train step was traced with, so the Monitor's trace keeps them.

Keras 3 (TensorFlow backend) reads the flags, each variable's and each layer's, when it traces
the train step: which variables it trains (``trainable_weights``) and how a layer runs (a
``BatchNormalization`` frozen runs in inference mode). It traces at the first step after
``compile()`` and runs that trace from then on: a layer frozen later without ``compile()`` is
still trained. The Monitor traces the step anew, with its hooks; so that watching changes
nothing, its trace reads the flags Keras' own trace read (:func:`pinned`), and a ``fit()``
after the Monitor's, without it, traces Keras' own step with the flags the Monitor's trace
read (:class:`FirstCall`), as Keras' step traced at that first ``fit()`` would have.

The flags of a trace are seen when it happens (:func:`observe`, from the Monitor's import on);
for a step traced before, they are read back from the optimizer, which Keras builds with the
variables of the first trace.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Flags:
    """The flags a trace read: ``(object, flag)`` per layer and per variable of the model,
    and the user's line whose ``fit()`` ran the trace (``""``: not known)."""

    layers: tuple[tuple[Any, bool], ...]
    variables: tuple[tuple[Any, bool], ...]
    site: str = ""

    def differ(self) -> bool:
        """Whether some flag is not what it was at the trace."""
        return any(bool(o._trainable) != f for o, f in (*self.layers, *self.variables))


def now(model: Any, site: str = "") -> Flags:
    """The model's flags as they are."""
    layers = tuple((layer, bool(layer._trainable)) for layer in _layers(model))
    return Flags(layers, tuple((v, bool(v._trainable)) for v in model.weights), site)


@contextlib.contextmanager
def pinned(flags: Flags | None) -> Iterator[None]:
    """The model's flags set to ``flags`` (None: left as they are), then put back. Set on the
    objects themselves, not through ``layer.trainable``, which would also set its sublayers'."""
    if flags is None or not flags.differ():
        yield
        return
    changed = [(o, bool(o._trainable)) for o, f in (*flags.layers, *flags.variables)
               if bool(o._trainable) != f]  # fmt: skip
    for o, f in (*flags.layers, *flags.variables):
        object.__setattr__(o, "_trainable", f)
    try:
        yield
    finally:
        for o, was in changed:
            object.__setattr__(o, "_trainable", was)


def changes(model: Any, flags: Flags) -> list[tuple[Any, bool]]:
    """Each variable whose flag no longer says what the trace does, with whether the trace
    trains it (frozen since: it does; made trainable since: it does not)."""
    with pinned(flags):
        trained = {id(v) for v in model.trainable_weights}
    now_trained = {id(v) for v in model.trainable_weights}
    return [(v, id(v) in trained) for v in model.weights
            if (id(v) in trained) != (id(v) in now_trained)]  # fmt: skip


class FirstCall:
    """A train function not yet traced whose first call traces it with ``flags``: Keras' own,
    put back by a Monitor whose trace stood in for its first one. It puts the function itself
    back on the model after that call."""

    def __init__(self, model: Any, function: Any, flags: Flags) -> None:
        self.model, self.function, self.flags = weakref.ref(model), function, flags

    def __call__(self, iterator: Any) -> Any:
        model = self.model()
        if model is not None and model.__dict__.get("train_function") is self:
            object.__setattr__(model, "train_function", self.function)
        with pinned(self.flags):
            result = self.function(iterator)
        _SEEN[self.function] = self.flags
        return result


def reference(model: Any, function: Any) -> Flags | None:
    """The flags ``function`` (the model's train function) was traced with; None when it was
    never traced (its first trace reads the flags as they are then)."""
    if isinstance(function, FirstCall):
        return function.flags
    with contextlib.suppress(TypeError):
        if function in _SEEN:
            return _SEEN[function]
    if not _traced(function):
        return None
    return _from_optimizer(model)


# train function -> the flags of its last trace (None: made while observed, not yet traced)
_SEEN: weakref.WeakKeyDictionary[Any, Flags | None] = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_observing = False


def observe(user_line: Callable[[], str]) -> None:
    """From now on, note the flags each Keras train step is traced with (idempotent). Keras'
    ``_make_function`` gets the step wrapped in a function that reads the flags while tracing
    and then calls the step: the graph traced is the same."""
    global _observing
    with _lock:
        if _observing:
            return
        try:
            from keras.src.backend.tensorflow.trainer import TensorFlowTrainer
        except ImportError:  # pragma: no cover - another Keras backend: nothing traced here
            return
        _observing = True
        make = TensorFlowTrainer._make_function

        def _make_function(self: Any, step_function: Any) -> Any:
            if step_function != self.train_step:  # the test or predict step
                return make(self, step_function)
            made: list[Any] = []

            def step(data: Any) -> Any:
                import tensorflow as tf

                if made and not tf.executing_eagerly():
                    with contextlib.suppress(Exception):  # never a failure of the step
                        if _SEEN.get(made[0]) is None:
                            _SEEN[made[0]] = now(self, user_line())
                return step_function(data)

            function = make(self, step)
            with contextlib.suppress(TypeError):
                made.append(function)
                _SEEN[function] = None
            return function

        TensorFlowTrainer._make_function = _make_function


def _layers(model: Any) -> list[Any]:
    return list(model._flatten_layers(include_self=True, recursive=True))


def _traced(function: Any) -> bool:
    """Whether Keras' train function (made before :func:`observe`) has traced its step: one
    of the ``tf.function`` objects it calls has."""
    for cell in getattr(function, "__closure__", None) or ():
        with contextlib.suppress(ValueError):
            count = getattr(cell.cell_contents, "experimental_get_tracing_count", None)
            if count is not None and count() > 0:
                return True
    return False


def _from_optimizer(model: Any) -> Flags | None:
    """The flags of a trace not seen, from the variables Keras built the optimizer with at
    the first trace: each such variable trainable, each other one that was made trainable
    not; a layer trainable when one of its own such variables was trained (a layer without
    any keeps its flag)."""
    optimizer = getattr(model, "optimizer", None)
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # mixed precision
    built = getattr(optimizer, "_trainable_variables", None)
    if not built:
        return None
    trained = {id(v) for v in built}
    layers: list[tuple[Any, bool]] = []
    capable: set[int] = set()
    for layer in _layers(model):
        own = list(getattr(layer, "_trainable_variables", ()))
        capable.update(id(v) for v in own)
        flag = any(id(v) in trained for v in own) if own else bool(layer._trainable)
        layers.append((layer, flag or (layer is model and bool(trained))))
    variables = tuple((v, id(v) in trained if id(v) in capable else bool(v._trainable))
                      for v in model.weights)  # fmt: skip
    return Flags(tuple(layers), variables)
