"""The validated spec: frozen dataclasses that later stages read; no TensorFlow here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.location import Location
from gradscope._src.results.expect import Expectation, Pos, matches_any

SPEC_VERSION = 1
DEFAULT_MAX_ELEMENTS = 2**26

#: The op names gradscope implements itself (contract section 1).
SPECIAL_OPS = ("stop_gradient", "assign", "layer")


@dataclass(frozen=True)
class InputDef:
    """Data fed to the model: a constant tensor, never trainable.

    ``values`` is the explicit value (a number or nested tuples) or None when generated:
    floats from N(0, 1), or uniform in ``range`` [low, high); integers uniform in ``range``,
    else zeros; booleans uniform.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: Any
    range: tuple[float, float] | None
    pos: Pos


@dataclass(frozen=True)
class VariableDef:
    """A ``tf.Variable``. ``init`` is ``normal`` | ``uniform`` | ``zeros`` | ``ones`` or a Keras
    initializer name; ignored when ``values`` is given."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    init: str
    values: Any
    range: tuple[float, float] | None
    trainable: bool
    pos: Pos


@dataclass(frozen=True)
class Ref:
    """A reference to an earlier name; ``index`` picks one output of a multi-output node
    (written ``name[0]``)."""

    name: str
    index: int | None
    pos: Pos


@dataclass(frozen=True)
class Literal:
    """A number or boolean written directly among a node's inputs."""

    value: int | float | bool | None
    pos: Pos


@dataclass(frozen=True)
class ListArg:
    """A list among a node's inputs (``tf.concat([a, b], ...)``); items are args themselves."""

    items: tuple[Arg, ...]
    pos: Pos


Arg = Ref | Literal | ListArg


@dataclass(frozen=True)
class Node:
    """One step of the computation.

    ``op`` is the name as written; ``target`` is where it resolved to: ``gradscope.<op>`` for
    gradscope's own ops, otherwise a path relative to ``tf`` (``math.reduce_mean``).
    ``attrs`` are literal keyword arguments, never resolved as references (plain Python
    values: numbers, strings, bools, None, lists, dicts).
    ``field_pos`` holds the position of each field of the node (``op``, ``inputs``,
    ``attrs``, ``attrs.<key>``) so later errors can point at them.
    """

    name: str
    op: str
    target: str
    args: tuple[Arg, ...]
    kwargs: tuple[tuple[str, Arg], ...]
    attrs: Mapping[str, Any]
    pos: Pos
    field_pos: Mapping[str, Pos] = field(default_factory=dict)

    @property
    def is_special(self) -> bool:
        return self.target.startswith("gradscope.")

    def refs(self) -> list[Ref]:
        """Every reference among the node's inputs, in order."""
        out: list[Ref] = []

        def walk(arg: Arg) -> None:
            if isinstance(arg, Ref):
                out.append(arg)
            elif isinstance(arg, ListArg):
                for item in arg.items:
                    walk(item)

        for a in self.args:
            walk(a)
        for _, a in self.kwargs:
            walk(a)
        return out


@dataclass(frozen=True)
class Loss:
    """A named loss: a node, optionally with an upstream gradient, a var_list and stop tensors."""

    name: str
    node: str
    grad_loss: Any
    vars: tuple[str, ...] | None
    stop_gradients: tuple[str, ...]
    pos: Pos

    def includes(self, variable: str) -> bool:
        """Whether ``variable`` is inside this loss's ``vars`` (always, when ``vars`` is absent)."""
        return self.vars is None or matches_any(variable, self.vars)


@dataclass(frozen=True)
class Spec:
    """A whole validated spec (contract section 1)."""

    path: str
    version: int
    name: str | None
    seed: int
    inputs: tuple[InputDef, ...]
    variables: tuple[VariableDef, ...]
    nodes: tuple[Node, ...]
    losses: tuple[Loss, ...]
    expect: tuple[Expectation, ...]
    max_elements: int = DEFAULT_MAX_ELEMENTS
    pos: Pos = field(default=Pos(1, 1))

    def location(self, pos: Pos) -> Location:
        return Location(self.path, pos.line, pos.column)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def loss(self, name: str) -> Loss:
        for loss in self.losses:
            if loss.name == name:
                return loss
        raise KeyError(name)

    def expectation(self, loss: str) -> Expectation | None:
        for e in self.expect:
            if e.loss == loss:
                return e
        return None
