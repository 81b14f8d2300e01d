"""Keras models in a watched gradient call: why a variable of one gets no gradient.

Keras warns "Gradients do not exist for variables ..." and trains on. Here each such
variable gets a cause from the model calls made inside the tape (``model.fit``'s own train
step, a custom ``train_step``, a plain loop): the outputs it reaches are read by no loss (a
head left out of ``compile(loss=...)``), or it reaches no output of its model at all (a layer
not on the path).
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.frontends.python import heads
from gradscope._src.results.causes import Cause
from gradscope._src.watcher.analyse import SourceStatic

_local = threading.local()

#: Outermost Keras model calls kept per thread (the gradient calls look for theirs here).
KEPT = 16


#: id(model) -> (a weak reference to it, the user's line of its last ``compile()``)
_compiled: dict[int, tuple[Any, str]] = {}


def compiled(model: Any, line: str) -> None:
    """``model.compile()`` returned at the user's ``line``: a forgotten head is named there."""
    with contextlib.suppress(TypeError):  # not weakly referable: its line stays unknown
        _compiled[id(model)] = (weakref.ref(model), line)


def compile_line(model: Any) -> str:
    """The user's line of ``model``'s last ``compile()`` the watcher saw, else ``""``."""
    ref, line = _compiled.get(id(model), (None, ""))
    return line if ref is not None and ref() is model else ""


def active() -> bool:
    """Whether the current thread is inside ``Model.fit`` (or ``train_on_batch``)."""
    return bool(getattr(_local, "depth", 0))


def api() -> str:
    """``fit`` or ``train_on_batch`` inside one (the outermost) whose model trains with Keras'
    own ``train_step``, else ``""``: a custom ``train_step``'s own ``tape.gradient`` is a
    ``GradientTape.gradient`` site at its own line (contract section 6)."""
    if not active() or not _keras_step(getattr(_local, "model", None)):
        return ""
    return str(getattr(_local, "api", ""))


def site() -> str:
    """The user's ``fit(...)`` (or ``train_on_batch(...)``) line running now, else ``""``."""
    return str(getattr(_local, "site", "")) if active() else ""


def enter(model: Any, api: str = "fit", site: str = "") -> None:
    """A ``fit()`` or ``train_on_batch()`` (``api``) of ``model`` called at the user's ``site``."""
    if not active():
        _local.api = api
        _local.site = site
    _local.depth = getattr(_local, "depth", 0) + 1
    _local.model = model


def running(state: Any, find: Any) -> Any:
    """The site an execution of a traced call belongs to: for Keras' own train step, the
    ``fit()`` line running it now (``find(site, api, mode)``), since a step traced at one
    ``fit()`` line runs again, untraced, at the next; else ``state`` itself."""
    if state.api not in ("fit", "train_on_batch") or state.key[2] != -1 or not site():
        return state
    return find(site(), str(_local.api), state.mode)


def leave() -> None:
    _local.depth -= 1
    if not _local.depth:
        _local.model = None


@contextmanager
def model_call() -> Iterator[bool]:
    """Around a Keras model's ``__call__``; yields whether it is an outermost one (not a
    sub-model called by another model)."""
    depth = getattr(_local, "calling", 0)
    _local.calling = depth + 1
    try:
        yield depth == 0
    finally:
        _local.calling = depth


def snapshot() -> tuple[int, Any, Any, str]:
    """This thread's ``fit`` state, for a thread that works for it (a replica's)."""
    depth, model = getattr(_local, "depth", 0), getattr(_local, "model", None)
    return depth, model, getattr(_local, "outputs", None), str(getattr(_local, "api", ""))


def restore(state: tuple[int, Any, Any, str] | None) -> None:
    """Take on a ``snapshot`` of another thread (None: leave this thread's as it is); the
    model outputs seen are shared (``notes`` keeps only those of the call it explains)."""
    if state is not None:
        _local.depth, _local.model, outputs, _local.api = state
        _local.outputs = deque(maxlen=KEPT) if outputs is None else outputs


def saw_outputs(model: Any, outputs: Any) -> None:
    """An outermost model call returned ``outputs`` (traced or eager tensors)."""
    kept = getattr(_local, "outputs", None)
    if kept is None:
        kept = _local.outputs = deque(maxlen=KEPT)
    kept.append((model, outputs))


def notes(call: Any, statics: Sequence[SourceStatic], variables: Sequence[Any],
          target_source: str) -> None:  # fmt: skip
    """Set a cause as the note of each source with no forward path to the target, from the
    outermost model calls whose tensors the call recorded.

    Args:
        call: the call's ``GraphCall`` or ``EagerCall``.
        statics: the sources; notes are set in place (a note already set is kept).
        variables: the sources themselves, in the same order.
        target_source: the line that made the target.
    """
    compiled = active() and _keras_step(getattr(_local, "model", None))
    outputs = list(getattr(_local, "outputs", None) or ())
    _explain(call, statics, variables, target_source, outputs, compiled)


def explain(call: Any, statics: Sequence[SourceStatic], variables: Sequence[Any], model: Any,
            y_pred: Any, part: str = "", target_source: str = "") -> None:  # fmt: skip
    """``notes`` for a caller that holds the model and the train step's predictions (the
    training Monitor, ``graph_calls.step_causes``) rather than the recorded model calls.

    Args:
        call: the train step's ``graphs.GraphCall`` (its loss the target).
        statics: the call's sources, analysed (``reachable`` known); notes set in place.
        variables: the sources themselves, in the same order.
        model: the Keras model.
        y_pred: the train step's predictions, as ``compute_loss`` received them.
        part: the compiled loss (output) the call's loss is, when it is one part of the total.
        target_source: the user's line that made the loss (``names.target_source``).
    """
    _explain(call, statics, variables, target_source, [(model, y_pred)], _keras_step(model),
             part)  # fmt: skip


def _explain(call: Any, statics: Sequence[SourceStatic], variables: Sequence[Any],
             target_source: str, outputs: list[tuple[Any, Any]],
             compiled: bool, part: str = "") -> None:  # fmt: skip
    missing = [i for i, s in enumerate(statics)
               if not s.has_gradient and not s.reachable and not s.cause]  # fmt: skip
    seen = [(m, named) for m, out in outputs
            if (named := _in_call(call, _outputs(m, out)))]  # fmt: skip
    if not missing or not seen:
        return
    graph = call.problem.graph
    sources = flow.source_bits(call.problem.sources)
    vsets = flow.variable_sets(graph, sources)
    for i in missing:
        reached = [(m, name) for m, named in seen for name, t in named
                   if vsets[graph.producer[t]] >> i & 1]  # fmt: skip
        if reached:
            statics[i].cause = _unread(reached, compiled, target_source, part)
            continue
        owner = [m for m, _ in seen if any(v is variables[i] for v in m.variables)]
        if owner:
            statics[i].cause = heads.no_path([], owner[0].name, "")


def _unread(reached: list[tuple[Any, str]], compiled: bool, target_source: str,
            part: str = "") -> Cause:  # fmt: skip
    """The cause of a source whose model outputs no loss reads: those of the model called
    last (nearest the loss), each named once (a model called twice)."""
    last = reached[-1][0]
    outputs = [n for m, n in reached if m is last]
    # Keras' own step: its loss is compile()'s, so the head was left out at that line
    return heads.no_path(outputs, last.name, target_source, compiled=compiled, part=part,
                         compiled_at=compile_line(last) if compiled else "")  # fmt: skip


def _keras_step(model: Any) -> bool:
    """Whether ``model`` trains with Keras' own ``train_step`` (its loss from compile()): the
    ``train_step`` its class runs is the one of its backend's Keras trainer (TensorFlow's,
    JAX's), read off the class so no other backend is imported."""
    if model is None:
        return False
    for owner in type(model).__mro__:
        if "train_step" in vars(owner):
            return owner.__module__.startswith("keras.src.backend.") and owner.__module__.endswith(
                ".trainer"
            )
    return False


def _in_call(call: Any, named: list[tuple[str, Any]]) -> list[tuple[str, int]]:
    """The outputs the call recorded, each with its tensor id in the call's graph."""
    out = []
    for name, tensor in named:
        if hasattr(call, "x"):  # a traced graph: tensors of this graph only
            ops = call.x.tf_ops
            mine = ops and getattr(tensor, "graph", None) is ops[0].graph
            found = call.x.tensor_id(tensor) if mine else None
        elif getattr(tensor, "graph", None) is None:  # an eager tensor (a traced one is not)
            found = call.tensors.get(getattr(tensor, "_id", -1))
        else:
            found = None
        if found is not None:
            out.append((name, found))
    return out


def _outputs(model: Any, y_pred: Any) -> list[tuple[str, Any]]:
    """``(output name, tensor)`` for each output of a model call."""
    if isinstance(y_pred, dict):
        return [(str(k), v) for k, v in y_pred.items() if _is_tensor(v)]
    items = list(y_pred) if isinstance(y_pred, (list, tuple)) else [y_pred]
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(items):
        names = [f"output {k}" for k in range(len(items))]
    return [(n, t) for n, t in zip(names, items, strict=True) if _is_tensor(t)]


def _is_tensor(value: Any) -> bool:
    """A traced or eager TensorFlow tensor (not a symbolic ``KerasTensor``)."""
    return hasattr(value, "op") or hasattr(value, "_id")
