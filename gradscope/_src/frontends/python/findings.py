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
from gradscope._src.results.facts import LossFacts, PairFacts

_TO_NUMPY = (
    "object has no attribute 'numpy'",
    "Cannot convert a symbolic",
    "numpy() is only available when eager execution is enabled",
)
_CUT_OUTSIDE = (
    " The path is cut outside TensorFlow (the value was converted to NumPy), so there is no "
    "op to name: a variable read before that line that gets no gradient is none:unexplained."
)


_RAN_EAGERLY = (
    "gradscope ran this loss eagerly under a GradientTape, and its statuses and norms come "
    "from there."
)
_FRESH = (
    "it starts again from its initial value at every step and never trains. Create it once, "
    "outside the loss (in the target function, or in a layer's build())."
)


def _listed(created: Sequence[tuple[Any, str]], name_of: Callable[[Any], str]) -> str:
    shown = ", ".join(
        f"`{name_of(v)}`" + (f" at {source}" if source else "") for v, source in created[:3]
    )
    return shown + (f" and {len(created) - 3} more" if len(created) > 3 else "")


def untraceable(exc: BaseException, eager: EagerLoss, name_of: Callable[[Any], str]) -> str:
    """Why a loss could not be traced, and where; its answer comes from the eager pass."""
    site = frames.of_exception(exc)
    at = f" at {site}" if site else ""
    message = frames.first_message_line(exc)
    text = str(exc)
    # The path is cut only where a variable the loss read gets no gradient: a value that was
    # only printed (print(loss.numpy())) cuts nothing.
    cut = any(eager.grads.get(ref, False) is None for ref in eager.reads)
    if any(marker in text for marker in _TO_NUMPY):
        return (
            f"converts a tensor to NumPy{at}, which a traced tf.function cannot do ({message}); "
            f"{_RAN_EAGERLY}{_CUT_OUTSIDE if cut else ''}"
        )
    if isinstance(exc, TypeError) and "SymbolicTensor" in text:
        number = _CUT_OUTSIDE.replace("to NumPy", "to a Python number") if cut else ""
        return (
            f"turns a tensor into a Python number{at}, which a traced tf.function cannot do "
            f"({message}); {_RAN_EAGERLY}{number}"
        )
    if "tf.Variables created on the first call" in text:
        listed = _listed(eager.created, name_of) or "a variable"
        return (
            f"creates a new variable on every call ({listed}): a traced tf.function refuses "
            f"that, and eagerly {_FRESH} {_RAN_EAGERLY[:-1]}, without the variables it creates."
        )
    if type(exc).__name__ == "OperatorNotAllowedInGraphError":
        return (
            f"uses a tensor as a Python bool{at}, which a traced tf.function cannot do "
            f"({message}); {_RAN_EAGERLY}"
        )
    return f"cannot be traced as a tf.function{at} ({message}); {_RAN_EAGERLY}"


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
    parts = []
    if traced_only:
        parts.append(f"{_subject(traced_only)} a gradient when traced but None eagerly")
    if eager_only:
        parts.append(f"{_subject(eager_only)} a gradient eagerly but None when traced")
    return (
        f"traced and eager gradients disagree: {'; '.join(parts)}. The statuses shown are the "
        "traced ones (what a tf.function training step computes); an eager training loop gets "
        "the other answer. Look for Python code that autograph converts (float(), int(), "
        "if/while on tensors) or state that changes between calls."
    )


def _subject(names: list[str]) -> str:
    return f"{', '.join(names)} {'gets' if len(names) == 1 else 'get'}"


def per_call_variables(model: PythonModel, name: str, eager: EagerLoss | None) -> str | None:
    """A note when a loss created variables both in the trace and in the eager pass."""
    traced = model.created.get(name, [])
    if not traced or eager is None or not eager.created:
        return None
    return (
        f"creates a new variable on every call ({_listed(traced, model.registry.name)}): {_FRESH}"
    )


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
) -> list[str]:
    """Every Python-only note for one traced loss."""
    name = loss.name
    notes = []
    if name in model.returned:
        notes.append(
            f"returns {model.returned[name]}, not a tensor: TensorFlow sees a constant, so the "
            "path from every variable is cut outside TensorFlow (the value was converted to "
            "NumPy or Python before the loss returned)."
        )
    shape = _shape(loss, eager)
    if shape:
        notes.append(
            f"returns a tensor of shape {list(shape)}, not a scalar: gradscope sums it, as "
            "tf.gradients and GradientTape.gradient do (the value shown is the sum)."
        )
    created = per_call_variables(model, name, eager)
    if created:
        notes.append(created)
    if eager is not None and eager.error is not None:
        site = frames.of_exception(eager.error)
        notes.append(
            f"running this loss eagerly raised {frames.first_message_line(eager.error)}"
            f"{f' at {site}' if site else ''}; only its traced gradients are reported."
        )
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
    return (
        f"no variable reaches this loss, and it reads NumPy arrays "
        f"({', '.join(f'`{a}`' for a in arrays)}): if one holds a model output turned "
        "into NumPy (.numpy(), np.asarray), the path was cut outside TensorFlow before "
        "the loss ran; keep it a tensor."
    )
