"""The ``nodes`` section -> Node: op names resolved, references checked against earlier names."""

from __future__ import annotations

import re
from typing import Any

from gradscope._src.frontends.yaml.attrs import check_attr, check_size
from gradscope._src.frontends.yaml.context import Context, join, suggest
from gradscope._src.frontends.yaml.model import Arg, ListArg, Literal, Node, Ref
from gradscope._src.frontends.yaml.ops import OpError, resolve_op
from gradscope._src.frontends.yaml.tensors import read_dtype
from gradscope._src.frontends.yaml.tree import YMap, YNode, YScalar, YSeq, plain
from gradscope._src.results.expect import Pos

NODE_FIELDS = ("name", "op", "inputs", "attrs")
_INDEXED = re.compile(r"^(.+)\[(\d+)\]$")


def declare_nodes(ctx: Context, node: YNode | None) -> list[tuple[int, YMap, str]]:
    """First pass: every node's mapping and name, each name added to the namespace.

    Returns:
        ``(index, mapping, name)`` for each node whose entry is a mapping with a name.
    """
    if node is None or (isinstance(node, YScalar) and node.value is None):
        return []
    items = ctx.sequence(node, "nodes", "a list of nodes")
    out = []
    for index, item in enumerate(items.items if items else ()):
        where = join("nodes", index)
        mapping = ctx.mapping(item, where, "a mapping like {name: h, op: matmul, inputs: [x, w]}")
        if mapping is None:
            continue
        entry = mapping.get("name")
        if entry is None:
            continue  # reported with the other missing fields in read_node
        name = ctx.string(entry.value, join(where, "name"), "a non-empty name")
        if name is not None:
            ctx.define(name, "node", entry.value.pos, join(where, "name"), index)
            out.append((index, mapping, name))
    return out


def read_node(ctx: Context, index: int, mapping: YMap, name: str) -> Node | None:
    """Second pass: one node's op, inputs and attrs (its name is already declared)."""
    where = join("nodes", index)
    found = ctx.fields(mapping, where, NODE_FIELDS, required=("name", "op"))
    errors_before = len(ctx.errors)
    check_size(ctx, mapping, where)
    if len(ctx.errors) > errors_before:
        return None
    field_pos: dict[str, Pos] = {key: entry.value.pos for key, entry in found.items()}
    op_entry = found.get("op")
    op = ctx.string(op_entry.value, join(where, "op"), "an op name") if op_entry else None
    target = _resolve(ctx, op, op_entry.value.pos, join(where, "op")) if op_entry else None
    errors = len(ctx.errors)
    args: list[Arg] = []
    kwargs: list[tuple[str, Arg]] = []
    if "inputs" in found:
        _read_inputs(ctx, found["inputs"].value, join(where, "inputs"), index, args, kwargs)
    attrs: dict[str, Any] = {}
    if "attrs" in found:
        attrs = _read_attrs(ctx, found["attrs"].value, join(where, "attrs"), field_pos, kwargs)
        if target is not None and not target.startswith("gradscope."):
            _check_tf_attrs(ctx, found["attrs"].value, join(where, "attrs"))
    if op is None or target is None or len(ctx.errors) > errors:
        return None
    return Node(name, op, target, tuple(args), tuple(kwargs), attrs, mapping.pos, field_pos)


def _resolve(ctx: Context, op: str | None, pos: Pos, where: str) -> str | None:
    if op is None:
        return None
    try:
        return resolve_op(op)
    except OpError as exc:
        ctx.error(pos, where, str(exc))
        return None


def _read_inputs(
    ctx: Context,
    node: YNode,
    where: str,
    index: int,
    args: list[Arg],
    kwargs: list[tuple[str, Arg]],
) -> None:
    if isinstance(node, YSeq):
        for position, item in enumerate(node.items):
            arg = read_arg(ctx, item, join(where, position), index)
            if arg is not None:
                args.append(arg)
    elif isinstance(node, YMap):
        for entry in node:
            if not entry.key.isidentifier():
                ctx.error(entry.key_pos, where, f"expected an argument name, saw {entry.key!r}")
                continue
            arg = read_arg(ctx, entry.value, join(where, entry.key), index)
            if arg is not None:
                kwargs.append((entry.key, arg))
    elif not (isinstance(node, YScalar) and node.value is None):
        ctx.expected(node, where, "a list of inputs or a mapping of argument names to inputs")


def read_arg(ctx: Context, node: YNode, where: str, index: int) -> Arg | None:
    """One input: a reference to an earlier name, a number or boolean, or a list of those."""
    if isinstance(node, YSeq):
        items = [read_arg(ctx, item, join(where, i), index) for i, item in enumerate(node.items)]
        if any(item is None for item in items):
            return None
        return ListArg(tuple(item for item in items if item is not None), node.pos)
    if isinstance(node, YMap):
        ctx.expected(node, where, "a name, a number or a list", " (literal options go in attrs)")
        return None
    if isinstance(node.value, str):
        return _reference(ctx, node.value, node.pos, where, index)
    return Literal(node.value, node.pos)


def _reference(ctx: Context, text: str, pos: Pos, where: str, index: int) -> Ref | None:
    defined = ctx.names.get(text)
    if defined is not None and defined.order < index:
        return Ref(text, None, pos)
    match = _INDEXED.match(text)
    base = ctx.names.get(match.group(1)) if match and defined is None else None
    if match and base is not None and base.order < index:
        if base.kind != "node":
            ctx.error(pos, where, f"expected a name, saw {text!r}; {base.name!r} has one output")
            return None
        return Ref(base.name, int(match.group(2)), pos)
    later = defined or base
    if later is not None and later.order == index:
        ctx.error(pos, where, f"expected an earlier name, saw {text!r}, this node itself")
    elif later is not None:
        message = f"expected an earlier name, saw {text!r}, which is defined later"
        ctx.error(pos, where, f"{message} at line {later.pos.line}")
    else:
        visible = [d.name for d in ctx.names.values() if d.order < index]
        hint = suggest(text, visible) or " (text options go in attrs)"
        ctx.error(pos, where, f"expected the name of an input, variable or earlier node, "
                  f"saw {text!r}{hint}")  # fmt: skip
    return None


def _check_tf_attrs(ctx: Context, node: YNode, where: str) -> None:
    """A TensorFlow op's attrs hold plain values only (``spec/attrs.py``); dtypes are names."""
    if not isinstance(node, YMap):
        return
    for entry in node:
        if not (entry.key == "dtype" or entry.key.endswith("_dtype")):
            check_attr(ctx, entry.key, entry.value, join(where, entry.key))


def _read_attrs(
    ctx: Context,
    node: YNode,
    where: str,
    field_pos: dict[str, Pos],
    kwargs: list[tuple[str, Arg]],
) -> dict[str, Any]:
    if isinstance(node, YScalar) and node.value is None:
        return {}
    mapping = ctx.mapping(node, where, "a mapping of literal keyword arguments")
    if mapping is None:
        return {}
    given = {key for key, _ in kwargs}
    attrs: dict[str, Any] = {}
    for entry in mapping:
        key_where = join(where, entry.key)
        if not entry.key.isidentifier():
            ctx.error(entry.key_pos, where, f"expected an argument name, saw {entry.key!r}")
        elif entry.key in given:
            ctx.error(entry.key_pos, key_where, "expected each argument once, saw it in inputs too")
        elif entry.key == "dtype" or entry.key.endswith("_dtype"):
            read_dtype(ctx, entry.value, key_where)
        field_pos[join("attrs", entry.key)] = entry.value.pos
        attrs[entry.key] = plain(entry.value)
    return attrs
