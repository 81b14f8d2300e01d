"""How the measuring ops read the program's tensors: the same values, and no new reader of a
tensor that TensorFlow's graph optimizer could fold into another op.

Grappler rewrites a value that exactly one op reads: the arithmetic optimizer's
MinimizeBroadcasts turns SGD's ``lr * (AddN * Rsqrt)`` (the update of a
``BatchNormalization`` scale) into ``(lr * AddN) * Rsqrt``; its AddOpsRewrite folds a chain of
additions into one ``AddN``; the remapper fuses ``MatMul + BiasAdd + Relu``, oneDNN's the
layer-norm and attention patterns. Each needs the value in the middle to have one reader.
Read by a second (a measuring op, or the ``Switch`` carrying it into the measuring
``tf.cond``) the value must be computed as written, the program's rounding changes, and a
watched fit ends with other weights: the bias before a batch norm or the key bias of an
attention layer, whose gradients are zero up to rounding, move in another direction.

So the measuring branch never reads a tensor that fewer than two of the program's live ops
read: it computes its own copy from the tensors the ops that made it read, recursively, down
to tensors two or more of the program's ops read already (one more reader changes no
"one reader" rule) or that no copy can be made of (a stateful op's, a placeholder, a
constant, a call). The copies run inside the branch, so only in the executions measured: on
those, the last op of each gradient (a kernel's ``MatMul``, a batch norm's gradient) runs
twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

#: Op types read as they are: a copy would not be the program's value (placeholders, reads of
#: variables) or would cost memory for nothing (a constant).
_LEAVES = frozenset({"Placeholder", "PlaceholderWithDefault", "_Arg", "Const", "HostConst"})
#: Backward ops no rewrite folds into the op that reads their output: the remapper's
#: contractions are ``Conv2D``, ``MatMul``, ``BatchMatMul``, ``DepthwiseConv2dNative`` and
#: ``Conv3D`` (never their gradients), and the arithmetic optimizer rewrites elementwise ops,
#: aggregations, casts and shapes. Read as they are: a copy would run the convolution again
#: (a ResNet50's measured step: 105 of them, most of its backward pass).
_NEVER_FOLDED = frozenset({
    "Conv2DBackpropInput", "Conv2DBackpropFilter", "Conv3DBackpropInputV2",
    "Conv3DBackpropFilterV2", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter", "MaxPoolGrad", "MaxPoolGradV2", "AvgPoolGrad",
    "FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3",
})  # fmt: skip


class Program:
    """The program's own ops in one graph, as they stand when the measuring ops are added:
    who reads each tensor among the ops that run."""

    def __init__(self, graph: Any, returned: Iterable[Any] = ()) -> None:
        """``graph``: the graph being traced; its ops so far are the program's. ``returned``:
        the tensors it returns (with the stateful ops, what decides which ops run); when not
        known, fewer ops count as running, and more is copied."""
        self.graph = graph
        self.last = int(graph.version)  # the id of the program's last op
        self._returned = {id(t) for t in returned}
        self._live: set[int] | None = None
        self._readers: dict[int, int] = {}

    def _ours(self, op: Any) -> bool:
        return op.graph is self.graph and op._id <= self.last

    def live(self) -> set[int]:
        """The ids of the ops that run: those a returned tensor or a stateful op (what
        TensorFlow runs whatever is fetched) needs, through data or control edges. Grappler
        prunes the others before it rewrites anything."""
        if self._live is None:
            ops = [op for op in self.graph.get_operations() if op._id <= self.last]
            returned = self._returned
            stack = [
                op for op in ops if _stateful(op) or any(id(t) in returned for t in op.outputs)
            ]
            seen: set[int] = set()
            while stack:
                op = stack.pop()
                if op._id in seen:
                    continue
                seen.add(op._id)
                stack.extend(t.op for t in op.inputs if self._ours(t.op))
                stack.extend(c for c in op.control_inputs if self._ours(c))
            self._live = seen
        return self._live

    def readers(self, tensor: Any) -> int:
        """How many of the program's running ops read ``tensor`` (a returned one: one more)."""
        key = id(tensor)
        if key not in self._readers:
            live = self.live()
            count = len({op._id for op in tensor.consumers() if self._ours(op) and op._id in live})
            self._readers[key] = count + (key in self._returned)
        return self._readers[key]

    def copied(self, tensor: Any) -> bool:
        """Whether the measuring ops read a copy of ``tensor`` rather than the tensor."""
        return self._ours(tensor.op) and self.readers(tensor) < 2 and _copyable(tensor.op)


def branch(program: Program | None, fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` (a ``tf.cond`` branch that measures) made to read the program's tensors through
    ``program``: each tensor it captures from the program's graph that ``Program.copied``
    says is copied is replaced, inside the branch, by a copy of the ops that made it (made
    once per branch, however often read). None: read as they are."""
    if program is None:
        return fn

    def measuring() -> Any:
        import tensorflow as tf

        inner = tf.compat.v1.get_default_graph()
        own = getattr(inner, "_capture_helper", None)  # a cond's keeps its bookkeeping
        if tf.executing_eagerly() or own is None:  # nothing captured (eager, TensorFlow 1)
            return fn()
        copies: dict[int, Any] = {}

        def capture(tensor: Any, name: Any) -> Any:
            op = tensor.op
            if not program.copied(tensor) and not _small_constant(tensor):
                return own(tensor, name)
            if op._id not in copies:
                try:  # its inputs captured through here again
                    copies[op._id] = _copy(inner, op)
                except Exception:  # a copy TensorFlow refuses: the tensor itself, as before
                    copies[op._id] = None
            made = copies[op._id]
            return own(tensor, name) if made is None else made.outputs[tensor.value_index]

        inner._capture_helper = capture
        try:
            return fn()
        finally:
            del inner._capture_helper

    return measuring


def _copy(graph: Any, op: Any) -> Any:
    """``op`` made again in ``graph`` (a branch): same type, inputs and attributes (its
    private ones, colocation and the like, left out), on the same device."""
    attrs = {k: v for k, v in op.node_def.attr.items() if not k.startswith("_")}
    with graph.device(op.device):
        return graph._create_op_internal(op.type, list(op.inputs),
                                         [t.dtype for t in op.outputs], attrs=attrs,
                                         op_def=op.op_def)  # fmt: skip


#: A constant of at most this many elements is made again in the branch rather than captured:
#: a copied op's shape inference may need its value (a ``Reshape``'s shape, a list's element
#: shape), which a captured placeholder does not have.
SMALL = 1024


def _small_constant(tensor: Any) -> bool:
    if tensor.op.type != "Const":
        return False
    size = tensor.shape.num_elements()
    return size is not None and size <= SMALL


def _stateful(op: Any) -> bool:
    try:
        return bool(op._is_stateful)
    except Exception:  # an op TensorFlow does not know: as ACD does, it runs
        return True


def _copyable(op: Any) -> bool:
    """Whether a copy of ``op`` computes the program's values: a stateless op of a known type
    that reads no resource and calls no function (a call, a loop or a cond is read as it
    is)."""
    if op.type in _LEAVES or op.type in _NEVER_FOLDED or _stateful(op):
        return False
    if any(t.dtype.name == "resource" for t in [*op.inputs, *op.outputs]):
        return False
    return not any(v.HasField("func") or len(v.list.func) for v in op.node_def.attr.values())
