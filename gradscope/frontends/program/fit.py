"""``keras.Model.fit``: why its train step gives a variable no gradient.

Keras warns "Gradients do not exist for variables ..." and trains on. Here each such
variable gets a cause: the model outputs it reaches have no loss (a head left out of
``compile(loss=...)``), or it reaches no output at all (a layer not on the path).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from gradscope.engine import cuts as flow
from gradscope.frontends.program.analyse import SourceStatic

_local = threading.local()


def active() -> bool:
    """Whether the current thread is inside ``Model.fit``."""
    return bool(getattr(_local, "depth", 0))


def enter(model: Any) -> None:
    _local.depth = getattr(_local, "depth", 0) + 1
    _local.model = model


def leave() -> None:
    _local.depth -= 1
    if not _local.depth:
        _local.model = None
        _local.outputs = None


def saw_outputs(model: Any, y_pred: Any) -> None:
    """The train step's predictions, as ``Trainer._compute_loss`` receives them."""
    if active():
        _local.outputs = (model, y_pred)


def notes(call: Any, statics: Sequence[SourceStatic]) -> tuple[str, ...]:
    """Causes for the sources with no forward path to the loss, set as each one's note;
    returns the call's own notes (none yet)."""
    seen = getattr(_local, "outputs", None)
    if seen is not None:
        explain(call, statics, *seen)
    return ()


def explain(call: Any, statics: Sequence[SourceStatic], model: Any, y_pred: Any) -> None:
    """Set the note of each source with no gradient and no forward path to the loss: the
    model outputs it reaches have no loss, or it reaches no output at all.

    Args:
        call: the train step's ``graphs.GraphCall`` (its loss the target).
        statics: the call's sources, analysed (``reachable`` known); notes set in place.
        model: the Keras model.
        y_pred: the train step's predictions, as ``compute_loss`` received them.
    """
    missing = [i for i, s in enumerate(statics) if not s.has_gradient and not s.reachable]
    if not missing or not hasattr(call, "x"):
        return
    named = _outputs(model, y_pred)
    graph = call.problem.graph
    sources = {t: 1 << i for i, t in enumerate(call.problem.sources) if t is not None}
    vsets = flow.variable_sets(graph, sources)
    for i in missing:
        reached = [name for name, tensor in named
                   if (t := call.x.tensor_id(tensor)) is not None
                   and vsets[graph.producer[t]] >> i & 1]  # fmt: skip
        if reached:
            heads = ", ".join(f"'{n}'" for n in reached)
            statics[i].note = (f"reaches only output {heads}, which no loss reads "
                               "(compile() gives it no loss)")  # fmt: skip
        else:
            statics[i].note = ("reaches no output of the model: its layer is not on the path "
                               "from the inputs to the outputs")  # fmt: skip


def _outputs(model: Any, y_pred: Any) -> list[tuple[str, Any]]:
    """``(output name, tensor)`` for each model output in the train step."""
    if isinstance(y_pred, dict):
        return [(str(k), v) for k, v in y_pred.items() if hasattr(v, "op")]
    items = list(y_pred) if isinstance(y_pred, (list, tuple)) else [y_pred]
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(items):
        names = [f"output {k}" for k in range(len(items))]
    return [(n, t) for n, t in zip(names, items, strict=True) if hasattr(t, "op")]
