"""A traced TensorFlow graph as the plain ``flow.Graph`` the cut analysis reads."""

from __future__ import annotations

import dis
from collections.abc import Sequence
from typing import Any

from gradscope._src import tfcompat
from gradscope._src.engine import cuts as flow
from gradscope._src.results.cut import NONE_INPUT_NAMES

#: Ops that write the resource at input 0; later reads see the value, never its gradient.
WRITE_TYPES = frozenset(
    {
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "ResourceStridedSliceAssign",
    }
)

#: Ops whose registered gradient function returns None for every input (also found by
#: ``_returns_only_none`` for functions not listed here). ``Sign`` is not one: its gradient is 0.
NONE_GRADIENT_TYPES = frozenset({"Round", "Rint", "Floor", "Ceil", "FloorDiv", "TruncateDiv"})

#: Floating inputs an op's registered gradient leaves without one although it passes gradient
#: to others (``results.cut.NONE_INPUT_NAMES``, the one table).
NONE_INPUTS: dict[str, frozenset[int]] = {
    op: frozenset(inputs) for op, inputs in NONE_INPUT_NAMES.items()
}


#: Ops whose first input only chooses a branch (``tf.cond``'s predicate, ``tf.switch_case``'s
#: index): it carries no value into the result, so it is no path and never a cut point.
_PREDICATES = {"If": 1, "StatelessIf": 1, "Case": 1, "StatelessCase": 1}


def _returns_only_none(fn: Any) -> bool:
    """Whether a gradient function reads nothing and returns only constants (``[None]``)."""
    try:
        instructions = list(dis.get_instructions(fn))
    except TypeError:
        return False
    reads = ("LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_ATTR", "CALL")
    return not any(i.opname.startswith(reads) for i in instructions)


#: Writes of TensorFlow 1 reference variables (``VariableV2``): the ref at input 0. Not
#: ``ScatterNd`` or ``TensorScatterUpdate``: those make a new tensor.
REF_WRITE_TYPES = frozenset(
    {"Assign", "AssignAdd", "AssignSub", "StridedSliceAssign"}
    | {f"Scatter{kind}" for kind in ("Update", "Add", "Sub", "Mul", "Div", "Min", "Max")}
    | {f"ScatterNd{kind}" for kind in ("Update", "Add", "Sub", "Min", "Max")}
)


def is_write(op_type: str) -> bool:
    return (
        op_type in WRITE_TYPES
        or op_type in REF_WRITE_TYPES
        or op_type.startswith("ResourceScatter")
    )


#: Ops that call a function by its ``f`` attribute.
CALL_TYPES = frozenset({"PartitionedCall", "StatefulPartitionedCall"})


def written_inputs(definition: Any) -> frozenset[int]:
    """The inputs a function body writes (``FunctionDef``): the resource arguments its
    ``assign``s take first. A call of it copies values into those variables, as a write does
    (``buf.assign(w * 2)`` inside a ``tf.function`` the loss calls)."""
    args = {a.name: k for k, a in enumerate(definition.signature.input_arg)}
    return frozenset(args[n.input[0]] for n in definition.node_def
                     if is_write(n.op) and n.input and n.input[0] in args)  # fmt: skip


def copying_writes(definition: Any) -> list[str]:
    """The writes inside a function body (``FunctionDef``) that copy a value made from the
    function's inputs into a resource input: the ``assign`` lines a call of it cuts paths at
    (``buf.assign(w * 2)`` inside a ``tf.function`` the loss calls is cut at that line, not
    at the call).

    Returns:
        The names of the write nodes, in body order.
    """
    args = {a.name for a in definition.signature.input_arg}
    written = {n.input[0] for n in definition.node_def
               if is_write(n.op) and n.input and n.input[0] in args}  # fmt: skip
    made = args - written  # values (and nodes) made from an input the body does not write
    for node in definition.node_def:
        if any(_source_of(i) in made for i in node.input if not i.startswith("^")):
            made.add(node.name)
    return [n.name for n in definition.node_def
            if is_write(n.op) and n.input and n.input[0] in written
            and any(_source_of(i) in made for i in n.input[1:])]  # fmt: skip


def _source_of(name: str) -> str:
    """The node (or argument) a ``FunctionDef`` input names (``mul:z:0`` -> ``mul``)."""
    return name.split(":", 1)[0]


def call_writes(op: Any) -> frozenset[int]:
    """The inputs of a call op whose function writes them (none for any other op)."""
    if op.type not in CALL_TYPES:
        return frozenset()
    try:
        function = op.graph._get_function(op.get_attr("f").name)  # NOTE: no public lookup
        return written_inputs(function.definition)
    except (AttributeError, KeyError, ValueError):
        return frozenset()


#: Writes that replace a variable's whole value (a slice write or ``assign_add`` keeps, or
#: reads, the old one).
_OVERWRITES = frozenset({"AssignVariableOp", "Assign"})


class GradientRegistry:
    """Caches, per op type, whether TensorFlow's gradient gives its inputs nothing."""

    def __init__(self) -> None:
        tf_ops = tfcompat.get("ops")

        self._get = tf_ops.get_gradient_function
        self._by_type: dict[str, bool] = {}

    def no_gradient(self, op: Any) -> bool:
        if op.type in NONE_GRADIENT_TYPES:
            return True
        if op.type in ("IdentityN",):  # tf.custom_gradient: decided per op by an attribute
            return self._lookup(op)
        if op.type not in self._by_type:
            self._by_type[op.type] = self._lookup(op)
        return self._by_type[op.type]

    def _lookup(self, op: Any) -> bool:
        try:
            fn = self._get(op)
        except LookupError:
            return True
        return fn is None or _returns_only_none(fn)


def _is_state(dtype: Any) -> bool:
    """A resource handle or a TensorFlow 1 reference (``float32_ref``): what writes write."""
    return bool(dtype.name == "resource" or dtype.name.endswith("_ref"))


def _carries_gradient(dtype: Any) -> bool:
    return bool(dtype.is_floating or dtype.is_complex or dtype.name in ("resource", "variant"))


class Extracted:
    """The flow graph of a list of ops, with maps between TensorFlow objects and ids."""

    def __init__(self, ops: Sequence[Any], registry: GradientRegistry) -> None:
        self.tf_ops = list(ops)
        self.op_index = {op.name: i for i, op in enumerate(self.tf_ops)}
        self.tensor_ids: dict[tuple[int, int], int] = {}
        self.tensors: list[Any] = []
        producer: list[int] = []
        differentiable: list[bool] = []
        nodes: list[flow.Op] = []
        for i, op in enumerate(self.tf_ops):
            outputs = []
            for t in op.outputs:
                self.tensor_ids[(i, t.value_index)] = len(self.tensors)
                outputs.append(len(self.tensors))
                self.tensors.append(t)
                producer.append(i)
                differentiable.append(_carries_gradient(t.dtype))
            inputs = [self.tensor_id(t) for t in op.inputs[_PREDICATES.get(op.type, 0) :]]
            written = [self.tensor_id(op.inputs[k]) for k in sorted(call_writes(op))]
            none = [self.tensor_id(op.inputs[k]) for k in sorted(NONE_INPUTS.get(op.type, ()))
                    if k < len(op.inputs)]  # fmt: skip
            nodes.append(
                flow.Op(
                    name=op.name,
                    type=op.type,
                    inputs=[t for t in inputs if t is not None],
                    outputs=outputs,
                    write=is_write(op.type),
                    no_gradient=registry.no_gradient(op),
                    writes=[t for t in written if t is not None],
                    none_inputs=[t for t in none if t is not None],
                )
            )
        self.graph = flow.Graph(nodes, producer, differentiable)
        self._link_assignments()

    def tensor_id(self, tensor: Any) -> int | None:
        """The id of a tensor of these ops, or None when it comes from elsewhere."""
        index = self.op_index.get(tensor.op.name)
        if index is None:
            return None
        return self.tensor_ids.get((index, tensor.value_index))

    def _link_assignments(self) -> None:
        # A read of a resource sees the last write to it before the read in program order
        # (TensorFlow's automatic control dependencies enforce that order, but only add the
        # control edges when the trace ends, so we follow creation order ourselves).
        last_write: dict[int, int] = {}
        for i, node in enumerate(self.graph.ops):
            for t in dict.fromkeys(node.inputs):
                if not _is_state(self.tensors[t].dtype):
                    continue
                if node.type in _OVERWRITES and node.inputs[0] == t:
                    continue  # the old value is gone: nothing of it reaches later reads
                w = last_write.get(t)
                if w is not None and w != i:
                    node.assign_preds.append(w)
            if node.write and node.inputs:
                last_write[node.inputs[0]] = i
            for t in node.writes:
                last_write[t] = i
        self._link_control_reads()

    def _link_control_reads(self) -> None:
        # A TensorFlow 1 reference variable is read through its snapshot (``x/read``, made
        # with the variable, so before any write): an op made under
        # ``control_dependencies([tf.assign(x, ...)])`` that takes a read of ``x`` sees what
        # the write wrote (``tf.identity(x)`` after ``tf.assign``).
        writes = {op.name: i for i, op in enumerate(self.graph.ops) if op.write and op.inputs}
        for i, op in enumerate(self.tf_ops):
            for control in op.control_inputs:
                w = writes.get(control.name)
                if w is None:
                    continue
                state = self.graph.ops[w].inputs[0]
                node = self.graph.ops[i]
                reads = [t for t in node.inputs
                         if state in self.graph.ops[self.graph.producer[t]].inputs]  # fmt: skip
                if reads and w not in node.assign_preds:
                    node.assign_preds.append(w)
