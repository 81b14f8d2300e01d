"""A traced ``FuncGraph`` or a TensorFlow 1 graph as the cut analysis' problem.

Ops are named at the user's line that made them (``op.traceback``). Which tensors receive a
gradient is asked of TensorFlow itself: of the program's own tape (by adding the tensors on
the paths as extra sources of the same call) or, for ``tf.gradients``, of a copy of the graph,
so the program's graph gains no op and no name changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradscope._src.engine import bodies, custom_gradient
from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import Extracted, GradientRegistry
from gradscope._src.frontends.python import frames
from gradscope._src.results.facts import CutPoint
from gradscope._src.watcher.analyse import Problem

_REGISTRY: list[GradientRegistry] = []

#: Dtypes whose small gradients underflow to 0.
HALF = ("float16", "bfloat16")


def registry() -> GradientRegistry:
    if not _REGISTRY:
        _REGISTRY.append(GradientRegistry())
    return _REGISTRY[0]


def mark(graph: Any) -> int:
    """The id of the last op ``graph`` holds: later ops have larger ids."""
    return int(graph.version) + 1


def source_tensor(graph: Any, source: Any) -> Any | None:
    """The tensor of ``graph`` that stands for a source: a variable's handle (captured by a
    ``FuncGraph`` as a placeholder), a reference variable's ``VariableV2`` output, or the
    watched tensor itself; None when the graph never saw it."""
    ref = getattr(source, "_ref", None)
    if callable(ref) and not hasattr(source, "handle"):  # a TensorFlow 1 reference variable
        tensor = ref()
        return tensor if tensor.graph is graph else None
    handle = getattr(source, "handle", None)
    return _in_graph(graph, source if handle is None else handle)


def captures_last(graph: Any) -> None:
    """Put ``graph``'s deferred captures back at the end of its inputs, where TensorFlow
    passes them, after measuring ops captured more values at the end of its trace.

    NOTE: ``func_graph_from_py_func`` orders the inputs (arguments, captures, deferred
    captures) before its automatic control dependencies exit, and a capture made later is
    appended after the deferred ones: the call then fails with "expected to be a int32
    tensor but is a resource tensor" (Keras optimizers under a ``tf.distribute`` strategy
    capture their iteration count by reference).
    """
    deferred = [t for t in _flat(graph.deferred_internal_captures)]
    if deferred:
        ids = {id(t) for t in deferred}
        graph.inputs = [t for t in graph.inputs if id(t) not in ids] + deferred


def _flat(captures: Any) -> list[Any]:
    import tensorflow as tf

    return list(tf.nest.flatten(captures, expand_composites=True))


def value_before(graph: Any, source: Any) -> Any | None:
    """A source's value in ``graph`` as the forward pass read it: a variable's first read
    (before any update the step makes), a watched tensor itself; None when not found."""
    tensor = source_tensor(graph, source)
    if tensor is None or tensor.dtype.name != "resource":
        return tensor
    reads = [op for op in tensor.consumers() if op.type == "ReadVariableOp"]
    return min(reads, key=lambda op: op._id).outputs[0] if reads else None


def _in_graph(graph: Any, tensor: Any) -> Any | None:
    """``tensor`` as ``graph`` sees it: itself, or the placeholder that captures it, directly
    (an eager handle) or through enclosing functions."""
    if getattr(tensor, "graph", None) is graph:
        return tensor
    if not hasattr(graph, "captures"):
        return None
    captures = graph.captures
    for ext, internal in captures:
        if ext is tensor:
            return internal
    outer = graph.outer_graph
    external = _in_graph(outer, tensor) if hasattr(outer, "captures") else None
    if external is None:
        return None
    for ext, internal in captures:
        if ext is external:
            return internal
    return None


def ops_in(graph: Any, spans: Sequence[tuple[int, int]]) -> list[Any]:
    """The ops of ``graph`` created inside any of ``spans`` (``(after, up_to)`` op ids)."""
    return [op for op in graph.get_operations() if any(a < op._id <= b for a, b in spans)]


class GraphCall:
    """One watched call on a graph: its flow graph and how to name its cut points."""

    def __init__(self, ops: Sequence[Any], sources: Sequence[Any | None],
                 targets: Sequence[Any]) -> None:  # fmt: skip
        wanted = [t.op for t in sources if t is not None] + [t.op for t in targets]
        ordered = {op._id: op for op in [*wanted, *ops]}
        self.x = Extracted([ordered[k] for k in sorted(ordered)], registry())
        ids = [self.x.tensor_id(t) if t is not None else None for t in sources]
        found = [self.x.tensor_id(t) for t in targets]
        half = [t.dtype.base_dtype.name in HALF for t in self.x.tensors]
        self.problem = Problem(self.x.graph, ids, [t for t in found if t is not None], half=half)
        self._visible: dict[int, bool] = {}  # asked once per cut and source: read once per op

    def probe_tensors(self, ids: Sequence[int]) -> list[Any]:
        return [self.x.tensors[t] for t in ids]

    def received(self, ids: Sequence[int], grads: Sequence[Any]) -> None:
        """Record which probes got a gradient."""
        self.problem.received.update(t for t, g in zip(ids, grads, strict=True) if g is not None)

    def stop(self, tensors: Sequence[Any]) -> None:
        for t in tensors:
            index = self.x.op_index.get(getattr(getattr(t, "op", None), "name", ""))
            if index is not None:
                self.problem.stop_ops.add(index)

    def inside(self, cuts: list[flow.Cut], live: list[int], received: set[int],
               reach: list[bool]) -> list[tuple[Any, CutPoint]]:  # fmt: skip
        """The cuts as the ops that made them, inside the bodies of the ``tf.function``s,
        loops and conds on the paths (``bodies.located``, as ``inspect`` names them)."""
        inner = bodies.Descent(registry()).descend(self.x, live, received, reach)
        out = []
        for cut in bodies.located(self.x, cuts, inner):
            point = self.point_of(cut.op, cut.kind)
            later = [self.point_of(op, cut.kind) for op in cut.later]
            out.append((cut, flow.with_later(point, later)))
        return out

    def locate(self, index: int, kind: str) -> CutPoint:
        return self.point_of(self.x.tf_ops[index], kind)

    def point_of(self, op: Any, kind: str) -> CutPoint:
        """The cut point of the TensorFlow ``op`` (of the graph or of a body inside it)."""
        custom = custom_gradient.site(op, frames.display_path)
        if custom is not None:  # the user's grad_fn gave this input None (as ``inspect``)
            return CutPoint(custom[0], op.type, kind, custom[1])
        site = frames.of_op(op)
        return CutPoint(op.name, op.type, kind, "" if site is None else str(site))

    def visible(self, index: Any) -> bool:
        """Whether the user wrote op ``index`` (or the TensorFlow op, inside a body)."""
        op = self.x.tf_ops[index] if isinstance(index, int) else index
        seen = self._visible.get(id(op))
        if seen is None:
            seen = self._visible[id(op)] = visible(op.type, frames.of_op(op))
        return seen


def visible(op_type: str, site: frames.Site | None) -> bool:
    """Whether the user's line names the op (``tf.argmax`` for ``ArgMax``, ``>`` for
    ``Greater``): a cut of a gradient that still flows is listed only then."""
    from gradscope._src.frontends.python.model import _OPERATORS

    if site is None:
        return False
    line = site.text()
    if op_type.lower() in line.lower().replace("_", ""):
        return True
    return any(symbol in line for symbol in _OPERATORS.get(op_type, ()))


def received_by_copy(
    graph: Any, targets: Sequence[Any], probes: Sequence[Any], stops: Sequence[Any], helper: Any
) -> list[Any]:
    """``tf.gradients(target, probes)`` in a copy of ``graph``: which probes get a gradient.

    Args:
        graph: the program's graph (left unchanged).
        targets: the target tensors of ``graph``.
        probes: tensors of ``graph``.
        stops: tensors of ``graph`` the call treats as constants (``stop_gradients``).
        helper: TensorFlow's own ``_GradientsHelper`` (unwatched).

    Returns:
        Per probe, a non-None marker where a gradient arrives.
    """
    import tensorflow as tf

    definition = graph.as_graph_def()
    copy = tf.Graph()
    with copy.as_default():
        tf.graph_util.import_graph_def(definition, name="")
        ys = [copy.get_tensor_by_name(t.name) for t in targets]
        xs = [copy.get_tensor_by_name(p.name) for p in probes]
        stop = [copy.get_tensor_by_name(s.name) for s in stops]
        grads = helper(ys, xs, stop_gradients=stop or None, src_graph=copy)
    return [None if g is None else True for g in grads]
