"""Which box of a picture each op belongs to: its variable, its spec node, or its layer's scope.

For a spec, every op lives under the name scope of the node that made it, and ``locate`` names
that node. For a Python target ``locate`` names the op itself, so ops are grouped by name scope
instead: a scope is a *container* (a model, split into its children) when two or more of its
child scopes have scopes of their own, as a model's layers do
(``sequential/dense/Cast/ReadVariableOp``); otherwise it is one box, which is one box per
Keras layer however many ops the layer makes. With ``expand`` every op is its own box.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gradscope._src.engine import cuts as flow

#: ``("variable", index)``, ``("node", name)``, ``("scope", scope)`` or ``("op", op index)``.
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
            return Label("op", scope.rsplit("/", 1)[-1], self._types(members), source, scope)
        assert isinstance(value, int)
        name = self.names[value]
        if where is not None and where[0] != name:  # a spec op: show its node, not N<i>
            name = f"{where[0]}/{name.split('/', 1)[-1]}"
        return Label("op", name, self.graph.ops[value].type, source, self.names[value])

    def _types(self, members: Sequence[int]) -> str:
        """``MatMul+BiasAdd`` for a box of a few ops, ``MatMul+5 more`` for many."""
        types = list(dict.fromkeys(self.graph.ops[i].type for i in members))
        useful = [t for t in types if t not in PLUMBING] or types
        if len(useful) <= 2:
            return "+".join(useful)
        return f"{useful[0]}+{len(useful) - 1} more"
