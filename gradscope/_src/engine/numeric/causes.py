"""Why a pair's gradient may differ from finite differences on purpose, beyond its cut points.

Two causes: an op on the pair's paths with a gradient of its own (``tf.custom_gradient``,
``gradient_override_map``), and an ``assign`` that overwrites the variable (TensorFlow's
gradient is then that of the value each read sees; finite differences change only the value
the variable starts with).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradscope._src.engine import custom_gradient
from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import Extracted, GradientRegistry
from gradscope._src.engine.protocol import LossEntry
from gradscope._src.results.facts import CutPoint

CUSTOM_GRADIENT = "custom-gradient"
ASSIGNED = "assigned"


class Causes:
    """Why a pair's gradient may differ from finite differences on purpose, beyond its cut
    points: ops with a gradient of their own (``tf.custom_gradient``) on its paths, and
    ``assign`` ops that overwrite the variable."""

    def __init__(self, model: Any, graph: Any, handles: dict[str, Any]) -> None:
        self.model = model
        self.x = Extracted(graph.get_operations(), GradientRegistry())
        self.bits = {name: k for k, name in enumerate(handles)}
        ids = {name: self.x.tensor_id(h) for name, h in handles.items()}
        sources = {t: 1 << self.bits[name] for name, t in ids.items() if t is not None}
        self.vsets = flow.variable_sets(self.x.graph, sources)
        self.custom = [i for i, op in enumerate(self.x.tf_ops) if _has_own_gradient(op)]
        self.writes: dict[str, list[int]] = {}
        for i, node in enumerate(self.x.graph.ops):
            if node.write and node.inputs:
                for name, t in ids.items():
                    if t == node.inputs[0]:
                        self.writes.setdefault(name, []).append(i)
        self.reach: dict[str, list[bool]] = {}

    def of(self, loss: LossEntry, variable: str) -> tuple[CutPoint, ...]:
        out = [self._point(i, ASSIGNED) for i in self.writes.get(variable, ())]
        reach = self._reach(loss) if self.custom else None
        bit = self.bits[variable]
        for i in self.custom:
            if reach is not None and reach[i] and self.vsets[i] >> bit & 1:
                out.append(self._point(i, CUSTOM_GRADIENT))
        return tuple(dict.fromkeys(out))

    def _reach(self, loss: LossEntry) -> list[bool] | None:
        if loss.name not in self.reach:
            op = getattr(loss.tensor, "op", None)
            target = self.x.op_index.get(op.name) if op is not None else None
            if target is None:
                return None
            self.reach[loss.name] = flow.reaching(self.x.graph, target)
        return self.reach[loss.name]

    def _point(self, index: int, kind: str) -> CutPoint:
        op = self.x.tf_ops[index]
        if kind == CUSTOM_GRADIENT:
            named = _custom_gradient_function(op, self.model.display_path)
            if named is not None:
                return CutPoint(named[0], op.type, kind, named[1])
        return flow.cut_point(op, kind, self.model.locate)


def _has_own_gradient(op: Any) -> bool:
    return custom_gradient.has_own_gradient(op)


def _custom_gradient_function(
    op: Any, display: Callable[[str], str] = str
) -> tuple[str, str] | None:
    return custom_gradient.function_of(op, display)
