"""What only Python code can get wrong, each explained in its own words on the loss it concerns.

- A loss that cannot be traced (``.numpy()``, ``np.mean`` on a tensor, ``float(t)``): its
  answer comes from the eager pass; variables that were read but get no gradient are
  ``none:unexplained`` (the path was cut outside TensorFlow: there is no op to name), and the
  note names the line that did the conversion.
- A loss that returns NumPy or a Python number instead of a tensor.
- A loss that returns a non-scalar (summed, as TensorFlow does).
- A loss that creates a new variable on every call (seen in both the trace and the eager pass).
- Traced and eager gradients that disagree about None-ness (never hidden).
- Every variable disconnected while the loss reads NumPy arrays (a ``.numpy()`` made earlier).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from gradscope._src.frontends.python import frames
from gradscope._src.frontends.python.eager import EagerLoss
from gradscope._src.frontends.python.model import PythonModel
from gradscope._src.frontends.python.variables import Chosen
from gradscope._src.results import words
from gradscope._src.results.causes import Cause, Untraceable, VariablePerCall
from gradscope._src.results.facts import LossFacts, PairFacts

_TO_NUMPY = (
    "object has no attribute 'numpy'",
    "Cannot convert a symbolic",
    "numpy() is only available when eager execution is enabled",
)


def _created(
    created: Sequence[tuple[Any, str]], name_of: Callable[[Any], str], untraceable: bool = False
) -> VariablePerCall:
    """The cause of a loss that creates ``created`` (``(variable, FILE:LINE)``) on every call."""
    return VariablePerCall(names=tuple(name_of(v) for v, _ in created),
                           lines=tuple(source for _, source in created),
                           line=next((source for _, source in created if source), ""),
                           untraceable=untraceable)  # fmt: skip


def untraceable(exc: BaseException, eager: EagerLoss, name_of: Callable[[Any], str]) -> Cause:
    """Why a loss could not be traced, and where; its answer comes from the eager pass."""
    site = frames.of_exception(exc)
    line = str(site) if site else ""
    message = frames.first_message_line(exc)
    text = str(exc)
    # The path is cut only where a variable the loss read gets no gradient: a value that was
    # only printed (print(loss.numpy())) cuts nothing.
    cut = any(eager.grads.get(ref, False) is None for ref in eager.reads)
    if any(marker in text for marker in _TO_NUMPY):
        return Untraceable(how="numpy", line=line, said=message, cut=cut)
    if isinstance(exc, TypeError) and "SymbolicTensor" in text:
        return Untraceable(how="number", line=line, said=message, cut=cut)
    if "tf.Variables created on the first call" in text:
        return _created(eager.created, name_of, untraceable=True)
    if type(exc).__name__ == "OperatorNotAllowedInGraphError":
        return Untraceable(how="bool", line=line, said=message)
    return Untraceable(how="other", line=line, said=message)


def eager_pairs(loss: LossFacts, eager: EagerLoss, chosen: Sequence[Chosen]) -> LossFacts:
    """A loss answered by the eager pass: one pair per variable, no cut points."""
    pairs = []
    for c, traced in zip(chosen, loss.pairs, strict=True):
        if not traced.requested:
            pairs.append(traced)
            continue
        key = c.variable.ref()
        stats = eager.grads.get(key)
        norm = stats.norm if stats is not None and np.isfinite(stats.norm) else None
        pairs.append(
            PairFacts(
                variable=c.name,
                requested=True,
                has_gradient=stats is not None,
                reachable=key in eager.reads or traced.reachable,
                sparse=bool(stats and stats.sparse),
                norm=norm,
                finite=stats.finite if stats is not None else True,
                all_zero=bool(stats and stats.zero),
            )
        )
    value = eager.value if eager.value is not None else loss.value
    return replace(loss, value=value, shape=eager.shape, pairs=tuple(pairs))


def eager_mode(loss: LossFacts, eager: EagerLoss, chosen: Sequence[Chosen]) -> LossFacts:
    """``--mode eager``: a traced loss answered from its eager pass. A variable the eager run
    never read (an untaken branch) has no path there; the traced cut points are kept."""
    answered = eager_pairs(loss, eager, chosen)
    pairs = []
    for c, traced, now in zip(chosen, loss.pairs, answered.pairs, strict=True):
        if not traced.requested:
            pairs.append(traced)
            continue
        read = c.variable.ref() in eager.reads and traced.reachable
        pairs.append(replace(now, reachable=read, cut_points=traced.cut_points))
    return replace(answered, pairs=tuple(pairs))


def disagreement(
    loss: LossFacts, eager: EagerLoss, chosen: Sequence[Chosen], skip: set[Any]
) -> str | None:
    """A note when the trace and the eager pass disagree about which gradients are None."""
    traced_only, eager_only = [], []
    for c, pair in zip(chosen, loss.pairs, strict=True):
        key = c.variable.ref()
        if not pair.requested or key in skip or key not in eager.grads:
            continue
        eager_has = eager.grads[key] is not None
        if pair.has_gradient and not eager_has:
            traced_only.append(f"`{c.name}`")
        elif eager_has and not pair.has_gradient:
            eager_only.append(f"`{c.name}`")
    if not traced_only and not eager_only:
        return None
    return words.disagree(traced_only, eager_only)


def per_call_variables(model: PythonModel, name: str, eager: EagerLoss | None) -> Cause | None:
    """The cause of a loss that created variables both in the trace and in the eager pass."""
    traced = model.created.get(name, [])
    if not traced or eager is None or not eager.created:
        return None
    return _created(traced, model.registry.name)


def numpy_inputs(fn: Callable[[], Any]) -> list[str]:
    """Names of NumPy arrays a loss function reads from its closure or its globals."""
    target = getattr(fn, "__func__", fn)
    if not inspect.isfunction(target):
        return []
    try:
        found = inspect.getclosurevars(target)
    except (TypeError, ValueError):
        return []
    values = {**found.globals, **found.nonlocals}
    return [k for k, v in values.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fc"]


def notes_for(
    model: PythonModel, loss: LossFacts, eager: EagerLoss | None, chosen: Sequence[Chosen]
) -> list[str | Cause]:
    """Every Python-only note for one traced loss (a cause, where it has one)."""
    name = loss.name
    notes: list[str | Cause] = []
    if name in model.returned:
        notes.append(words.returns_untensor(model.returned[name]))
    shape = _shape(loss, eager)
    if shape:
        notes.append(words.not_scalar(shape))
    created = per_call_variables(model, name, eager)
    if created:
        notes.append(created)
    if eager is not None and eager.error is not None:
        site = frames.of_exception(eager.error)
        message = frames.first_message_line(eager.error)
        notes.append(words.eager_raised(message, f" at {site}" if site else ""))
    elif eager is not None:
        skip = {v.ref() for v, _ in model.created.get(name, [])}
        found = disagreement(loss, eager, chosen, skip)
        if found:
            notes.append(found)
    disconnected = numpy_disconnected(model, loss)
    if disconnected:
        notes.append(disconnected)
    return notes


def _shape(loss: LossFacts, eager: EagerLoss | None) -> tuple[int | None, ...]:
    """The loss's shape: the eager value's when the trace does not know it (a ``py_function``
    returns a tensor of unknown shape); empty when unknown both ways."""
    shape = loss.shape
    if None in shape and eager is not None and eager.error is None and eager.value is not None:
        shape = eager.shape
    return () if None in shape else shape


def numpy_disconnected(model: PythonModel, loss: LossFacts) -> str | None:
    """A note when no variable reaches a loss that reads NumPy arrays (converted earlier?)."""
    requested = [p for p in loss.pairs if p.requested]
    if not requested or any(p.reachable for p in requested) or loss.name in model.returned:
        return None
    arrays = numpy_inputs(model.resolved.target.losses[loss.name])
    if not arrays:
        return None
    return words.numpy_read(arrays)
