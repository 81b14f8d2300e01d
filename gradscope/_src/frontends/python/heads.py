"""Keras models a target's losses call: which of their outputs each variable reaches, so a
variable with no path to a loss gets the cause ``gradscope run`` gives it (an output no loss
reads, a layer the model's ``call`` skips), as causes of ``results/causes.py``.

While the losses are traced, each outermost Keras model call is recorded with its outputs
(:func:`recording`); afterwards the traced graph is walked back from each output and from
each loss to the variables they read (:func:`causes`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from gradscope._src.engine.retrace import handle
from gradscope._src.results.causes import Cause, OffPath, UnreadOutput

#: (model, its outputs) of each outermost Keras model call, in call order.
Calls = list[tuple[Any, Any]]


@contextlib.contextmanager
def recording(calls: Calls) -> Iterator[None]:
    """Record every outermost Keras model call made inside the block (in this thread) into
    ``calls``."""
    from gradscope._src import patching

    depth = [0]
    me = threading.get_ident()

    def make(original: Any) -> Any:
        def patched(self: Any, *args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                outputs = original(self, *args, **kwargs)
            finally:
                depth[0] -= 1
            if not depth[0]:
                calls.append((self, outputs))
            return outputs

        return patched

    with patching.Patches(when=lambda: threading.get_ident() == me) as patches:
        patches.set("keras.Model.__call__", make)
        yield


def causes(
    graph: Any, calls: Calls, loss: Any, names: Mapping[int | None, str], loss_site: str
) -> dict[str, Cause]:
    """The cause of each variable of a called model that ``loss`` does not read.

    Args:
        graph: the traced graph the loss and the model calls are in.
        calls: the model calls the loss made (:func:`recording`).
        loss: the loss tensor.
        names: report name by ``id`` of each variable's handle.
        loss_site: the line that made the loss (``FILE:LINE``), or ``""``.

    Returns:
        Report name -> cause, for the variables of a called model the loss reads none of.
    """
    captured = {id(inner): id(outer) for outer, inner in _captures(graph)}
    read = _variables(loss, captured)
    out: dict[str, Cause] = {}
    for model, outputs in calls:
        named = [(n, t) for n, t in _outputs(model, outputs) if getattr(t, "graph", None) is graph]
        if not named:
            continue
        reached = {n: _variables(t, captured) for n, t in named}
        own = {h for h in map(handle_id, model.variables) if h is not None}
        if not own & read:  # the loss reads none of this model's variables: not its model
            continue
        for unread in own - read:
            name = names.get(unread)
            if name is None or name in out:
                continue
            heads = [n for n, handles in reached.items() if unread in handles]
            out[name] = no_path(heads, model.name, loss_site)
    return out


def no_path(heads: Sequence[str], model: str, loss: str, *, compiled: bool = False,
            part: str = "", compiled_at: str = "") -> Cause:  # fmt: skip
    """Why a variable of Keras model ``model`` that no path leads from to ``loss`` gets no
    gradient: the outputs it reaches (``heads``) no loss reads, or it reaches none (its layer
    is off the path from the model's inputs to its outputs). The one rule for a Python
    target's losses (:func:`causes`) and a watched call (``watcher/fit.py``).

    Args:
        heads: the model's outputs the variable reaches, each once.
        model: the model's name.
        loss: the line that made the loss (``FILE:LINE``; "" unknown).
        compiled: the model trains with Keras' own step, whose loss is ``compile()``'s.
        part: the loss is that compiled loss alone (one output's).
        compiled_at: the user's line of the model's ``compile()`` ("" unknown).
    """
    if not heads:
        return OffPath(model=model)
    return UnreadOutput(names=tuple(dict.fromkeys(heads)), model=model, line=loss,
                        compiled=compiled, part=part, compiled_at=compiled_at)  # fmt: skip


def handle_id(variable: Any) -> int | None:
    """``id`` of a variable's resource handle, the key graphs know it by; None for a
    variable with none (not a TensorFlow one)."""
    try:
        return id(handle(variable))
    except AttributeError:
        return None


def _captures(graph: Any) -> Sequence[tuple[Any, Any]]:
    try:
        return list(graph.captures)
    except (AttributeError, TypeError):
        return []


def _variables(tensor: Any, captured: Mapping[int, int]) -> set[int]:
    """``id``s of the variable handles ``tensor`` is computed from (through captures)."""
    seen: set[int] = set()
    found: set[int] = set()
    todo = [tensor]
    while todo:
        t = todo.pop()
        if id(t) in captured:
            found.add(captured[id(t)])
        op = t.op
        if op._id in seen:
            continue
        seen.add(op._id)
        todo += list(op.inputs)
    return found


def _outputs(model: Any, outputs: Any) -> list[tuple[str, Any]]:
    """``(output name, tensor)`` for each output of a model call (as ``gradscope run`` names
    them: the model's output names, else ``output K``)."""
    if isinstance(outputs, dict):
        return [(str(k), v) for k, v in outputs.items() if hasattr(v, "op")]
    items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(items):
        names = [f"output {k}" for k in range(len(items))]
    return [(n, t) for n, t in zip(names, items, strict=True) if hasattr(t, "op")]
