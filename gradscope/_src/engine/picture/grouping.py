"""Which box of a picture each op belongs to: its variable, its spec node, or its layer's scope.

For a spec, every op lives under the name scope of the node that made it, and ``locate`` names
that node. For a Python target ``locate`` names the op itself, so ops are grouped by name scope
instead: a scope is a *container* (a model, split into its children) when two or more of its
child scopes have scopes of their own, as a model's layers do
(``sequential/dense/Cast/ReadVariableOp``); otherwise it is one box, which is one box per
Keras layer however many ops the layer makes. With ``expand`` every op is its own box.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gradscope._src.engine import cuts as flow
from gradscope._src.results.cut import STOP_TYPES

#: ``("variable", index)``, ``("node", name)``, ``("scope", scope)``, ``("line", FILE:LINE)``
#: (a Python target's ops outside any layer, one box per line of the user's) or
#: ``("op", op index)``.
GroupKey = tuple[str, object]

#: Op types that only move values around; a box is not labelled by them when it has others.
PLUMBING = frozenset({"ReadVariableOp", "Identity", "Placeholder", "Const", "NoOp", "Cast"})


@dataclass(frozen=True)
class Label:
    """What a box shows: its kind, name, op and line, and its full scope for a tooltip."""

    kind: str  # "variable" | "op"
    name: str
    op: str
    source: str
    scope: str
    index: int = -1


def scope_boxes(names: Sequence[str]) -> list[str]:
    """Per op name, the scope that is its box, or the op name itself when it is its own box.

    Example:
        >>> scope_boxes(["seq/dense/MatMul", "seq/dense/Cast/ReadVariableOp",
        ...              "seq/dense_1/BiasAdd/ReadVariableOp", "seq/dense_1/BiasAdd", "Mean"])
        ['seq/dense', 'seq/dense', 'seq/dense_1', 'seq/dense_1', 'Mean']
    """
    paths = [tuple(n.split("/")[:-1]) for n in names]
    children: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for path in paths:
        for k in range(len(path)):
            children[path[:k]].add(path[: k + 1])

    def container(scope: tuple[str, ...]) -> bool:
        return not scope or sum(1 for c in children[scope] if children.get(c)) >= 2

    out = []
    for name, path in zip(names, paths, strict=True):
        scope: tuple[str, ...] = ()
        while container(scope) and len(scope) < len(path):
            scope = path[: len(scope) + 1]
        out.append(name if container(scope) else "/".join(scope))
    return out


class Grouping:
    """The box of every op on a path, and what each box shows."""

    def __init__(
        self,
        graph: flow.Graph,
        names: Sequence[str],
        on_path: Sequence[bool],
        handle_ops: dict[int, int],
        variables: Sequence[str],
        locate: Callable[[int], tuple[str, str] | None],
        describe: Callable[[int], str | None],
        expand: bool,
    ) -> None:
        self.graph, self.names, self.handle_ops = graph, list(names), handle_ops
        self.variables, self.locate, self.describe = list(variables), locate, describe
        self.ops = [i for i, on in enumerate(on_path) if on]
        self.keys: dict[int, GroupKey] = {}
        self._assign(expand)
        self._attach_strays()
        self.members: dict[GroupKey, list[int]] = defaultdict(list)
        for i in self.ops:
            self.members[self.keys[i]].append(i)

    def key(self, op: int) -> GroupKey:
        return self.keys[op]

    def ordered(self) -> list[GroupKey]:
        """Every box's key, in the order of its first op (the order TensorFlow built them)."""
        return list(dict.fromkeys(self.keys[i] for i in self.ops))

    def _assign(self, expand: bool) -> None:
        scoped: list[int] = []
        for i in self.ops:
            where = self.locate(i)
            if i in self.handle_ops:
                self.keys[i] = ("variable", self.handle_ops[i])
            elif expand:
                self.keys[i] = ("op", i)
            elif where is not None and where[0] != self.names[i]:
                self.keys[i] = ("node", where[0])
            else:
                scoped.append(i)
        if any(kind == "node" for kind, _ in self.keys.values()):
            return  # a spec: the ops of no node join a neighbour's box (_attach_strays)
        boxes = scope_boxes([self.names[i] for i in scoped])
        for i, box in zip(scoped, boxes, strict=True):
            self.keys[i] = ("op", i) if box == self.names[i] else ("scope", box)
            where = self.locate(i)
            op = self.graph.ops[i]
            if (box == self.names[i] and where is not None and where[1]
                    and op.type not in STOP_TYPES and not op.no_gradient
                    and code_at(where[1])):  # fmt: skip
                self.keys[i] = ("line", where[1])  # the user's line: one box for its ops

    def _attach_strays(self) -> None:
        """Ops that belong to no node (a read made for the loss) join a neighbour's box:
        the first consumer's, else the first producer's, else their own."""
        consumers: dict[int, list[int]] = defaultdict(list)
        for i in self.ops:
            for t in self.graph.value_inputs(self.graph.ops[i]):
                consumers[self.graph.producer[t]].append(i)
        for i in reversed(self.ops):
            if i not in self.keys:
                near = [self.keys[c] for c in consumers[i] if c in self.keys]
                if near:
                    self.keys[i] = near[0]
        for i in self.ops:
            if i not in self.keys:
                inputs = self.graph.value_inputs(self.graph.ops[i])
                near = [k for t in inputs if (k := self.keys.get(self.graph.producer[t]))]
                self.keys[i] = near[0] if near else ("op", i)

    def label(self, key: GroupKey) -> Label:
        """What the box ``key`` shows."""
        kind, value = key
        members = self.members[key]
        where = next((w for i in members if (w := self.locate(i)) is not None), None)
        source = where[1] if where is not None else ""
        if kind == "variable":
            assert isinstance(value, int)
            return Label("variable", self.variables[value], "", "", "", value)
        if kind == "node":
            said = next((d for i in members if (d := self.describe(i))), None)
            return Label("op", str(value), said or self._types(members), source, str(value))
        if kind == "scope":
            scope = str(value)
            name = scope.rsplit("/", 1)[-1]
            name = "compile() loss" if name in _LOSS_SCOPES else name
            return Label("op", name, self._types(members), source, scope)
        if kind == "line":
            code = code_at(str(value))
            return Label("op", code or str(value), self._types(members), str(value),
                         code_at(str(value), 200) or str(value))  # fmt: skip
        assert isinstance(value, int)
        name = self.names[value]
        if where is not None and where[0] != name:  # a spec op: show its node, not N<i>
            name = f"{where[0]}/{name.split('/', 1)[-1]}"
        op_type = self.graph.ops[value].type
        words = WORDS.get(op_type, op_type)
        if where is not None and where[0] == name and source and code_at(source):
            name = code_at(source, focus=words)  # a Python target's op: the user's code
        return Label("op", name, words, source, self.names[value])

    def _types(self, members: Sequence[int]) -> str:
        """What a box of ops computes, in a user's words (``summary``)."""
        return summary([self.graph.ops[i].type for i in members],
                       [self.names[i] for i in members])  # fmt: skip


def code_at(source: str, width: int = 34, focus: str = "") -> str:
    """The user's code at ``FILE:LINE``, stripped and cut to ``width`` characters (``…``)
    around ``focus`` when the line holds it (the call that made the op:
    ``…keras.ops.stop_gradient(body))``); "" when the file cannot be read."""
    import linecache

    from gradscope._src.location import Location

    place = Location.parse(source)
    if place is None or place.line < 1:
        return ""
    text = linecache.getline(place.file, place.line).strip()
    if len(text) <= width:
        return text
    at = text.find(focus) if focus else -1
    if at >= 0 and at + len(focus) > width - 1:  # the call is past the cut: start at it
        while at > 0 and (text[at - 1].isalnum() or text[at - 1] in "._"):
            at -= 1  # its whole name: ``keras.ops.stop_gradient``
        rest = text[at:]
        return "…" + (rest if len(rest) <= width - 1 else rest[: width - 2] + "…")
    return text[: width - 1].rstrip() + "…"


#: An op type in the words a user reads it by (``summary``); types not here keep their name.
WORDS = {
    "MatMul": "matmul", "BatchMatMulV2": "matmul", "BatchMatMulV3": "matmul",
    "Conv2D": "conv2d", "Conv1D": "conv1d", "Conv3D": "conv3d",
    "DepthwiseConv2dNative": "depthwise conv2d", "Conv2DBackpropInput": "conv2d transpose",
    "BiasAdd": "+ bias", "AddV2": "add", "Add": "add", "AddN": "add", "Sub": "subtract",
    "Mul": "multiply", "RealDiv": "divide", "DivNoNan": "divide", "Neg": "negate",
    "Relu": "relu", "Relu6": "relu6", "LeakyRelu": "leaky relu", "Elu": "elu", "Selu": "selu",
    "Sigmoid": "sigmoid", "Tanh": "tanh", "Softplus": "softplus", "Softmax": "softmax",
    "LogSoftmax": "log softmax", "Mean": "mean", "Sum": "sum", "Max": "max", "Min": "min",
    "Prod": "product", "Square": "square", "SquaredDifference": "squared difference",
    "Sqrt": "sqrt", "Rsqrt": "rsqrt", "Pow": "power", "Exp": "exp", "Log": "log",
    "Log1p": "log1p", "Abs": "abs", "Maximum": "maximum", "Minimum": "minimum",
    "ClipByValue": "clip", "StopGradient": "stop_gradient", "PreventGradient": "stop_gradient",
    "FusedBatchNormV3": "batch norm", "MaxPool": "max pool", "AvgPool": "average pool",
    "Reshape": "reshape", "Transpose": "transpose", "ConcatV2": "concat", "Pack": "stack",
    "GatherV2": "gather", "ResourceGather": "embedding lookup", "Squeeze": "squeeze",
    "ExpandDims": "expand dims", "StridedSlice": "slice", "Slice": "slice", "Tile": "tile",
    "SelectV2": "where", "Select": "where", "ArgMax": "argmax", "ArgMin": "argmin",
    "Round": "round", "Floor": "floor", "Ceil": "ceil", "Sign": "sign",
    "SparseSoftmaxCrossEntropyWithLogits": "softmax cross-entropy",
    "SoftmaxCrossEntropyWithLogits": "softmax cross-entropy",
    "GreaterEqual": "compare", "Greater": "compare", "Less": "compare", "LessEqual": "compare",
    "Equal": "compare", "NotEqual": "compare", "Multinomial": "sample",
    "RandomStandardNormal": "random", "RandomUniform": "random", "EagerPyFunc": "py_function",
    "PyFunc": "numpy_function", "If": "tf.cond", "StatelessIf": "tf.cond", "Case": "switch_case",
    "While": "while loop", "StatelessWhile": "while loop", "AssignVariableOp": "assign",
    "PartitionedCall": "tf.function", "StatefulPartitionedCall": "tf.function",
}  # fmt: skip

#: The most words a box's summary lists before it counts the rest.
SHOWN_WORDS = 3


def summary(types: Sequence[str], names: Sequence[str] = ()) -> str:
    """What a box computes, in a few words a user recognises: a dense layer's ``matmul +
    bias, relu``; a Keras compiled loss by the losses its scope holds (``mse``); else
    the first words of its ops and how many there are (``compare, where, mean … 11 ops``).

    Example:
        >>> summary(["ReadVariableOp", "MatMul", "BiasAdd", "Relu"])
        'matmul + bias, relu'
        >>> summary(["Sub", "Square", "Mean"], ["compile_loss/mse/sub", "compile_loss/mse/Square",
        ...                                     "compile_loss/mse/Mean"])
        'mse'
    """
    losses = _loss_scopes(names)
    if losses:
        return " + ".join(losses)
    useful = [t for t in dict.fromkeys(types) if t not in PLUMBING] or list(dict.fromkeys(types))
    words = list(dict.fromkeys(WORDS.get(t, t) for t in useful))
    if len(words) >= 2 and words[1] == "+ bias":  # a layer's kernel and bias: one phrase
        words = [f"{words[0]} + bias", *words[2:]]
    elif len(words) >= 2 and words[0] in ("matmul", "conv2d") and words[1] == "add":
        words = [f"{words[0]} + bias", *words[2:]]  # Keras 3 adds its bias with AddV2
    if len(words) <= SHOWN_WORDS:
        return ", ".join(words)
    ops = sum(1 for t in types if t not in PLUMBING)
    return f"{', '.join(words[:SHOWN_WORDS])} … {ops} ops"


#: Scopes Keras puts a compiled loss under; the scopes inside name each loss.
_LOSS_SCOPES = ("compile_loss",)


def _loss_scopes(names: Sequence[str]) -> list[str]:
    """The losses a Keras compiled loss's scope holds, by the scopes inside it
    (``compile_loss/sparse_categorical_crossentropy/...``: ``sparse categorical
    crossentropy``); none for any other box."""
    found: list[str] = []
    for name in names:
        parts = name.split("/")
        if len(parts) >= 3 and parts[0] in _LOSS_SCOPES:
            found.append(re.sub(r"_\d+$", "", parts[1]).replace("_", " "))
    return list(dict.fromkeys(found))
