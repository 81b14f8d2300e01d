"""The op registry: one small function per gradscope op, and the call into ``tf.<path>``."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.frontends.yaml.forward import budget, limits
from gradscope._src.frontends.yaml.forward.layers import make_layer, weight_name
from gradscope._src.frontends.yaml.model import Node
from gradscope._src.results.expect import Pos


@dataclass
class BuiltVariable:
    """A variable of the built model, a spec variable or one a ``layer`` node created."""

    name: str
    variable: Any
    trainable: bool
    pos: Pos
    node: str | None = None  # the layer node that created it, None for spec variables


@dataclass
class Context:
    """What an op function may use: TensorFlow, Keras, and where layer variables go."""

    tf: Any
    keras: Any
    variables: list[BuiltVariable] = field(default_factory=list)
    max_elements: int | None = None  # the largest weight a layer may make (--max-elements)
    layers: dict[str, Any] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # the spec's own names -> what each is


OpFn = Callable[[Context, Node, list[Any], dict[str, Any]], Any]


def _only_input(node: Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    values = list(args) + list(kwargs.values())
    if len(values) != 1:
        raise ValueError(f"{node.op} takes exactly one input, saw {len(values)}")
    return values[0]


def stop_gradient(ctx: Context, node: Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``tf.stop_gradient`` of the node's one input."""
    return ctx.tf.stop_gradient(_only_input(node, args, kwargs))


def assign(ctx: Context, node: Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Write ``value`` into variable ``ref`` (into the slice at ``begin``), as ``X[...].assign``."""
    ref = kwargs.get("ref", args[0] if args else None)
    value = kwargs.get("value", args[1] if len(args) > 1 else None)
    if ref is None or value is None:
        raise ValueError("assign needs inputs {ref: VARIABLE, value: TENSOR}")
    if not hasattr(ref, "assign"):
        raise ValueError("assign's ref must be a variable")
    value = ctx.tf.convert_to_tensor(value, dtype=ref.dtype)
    begin = node.attrs.get("begin")
    if begin is None:
        ref.assign(value)
        return ref
    sizes = value.shape.as_list()
    if len(begin) != len(sizes) or any(s is None for s in sizes):
        raise ValueError(f"begin {list(begin)} does not match the value's shape {sizes}")
    index = tuple(slice(b, b + s) for b, s in zip(begin, sizes, strict=True))
    ref[index].assign(value)
    return ref


def layer(ctx: Context, node: Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call a Keras layer; the variables it creates are named ``<node>/<weight>``."""
    bounded = (
        limits.weights_within(ctx.keras, ctx.max_elements)
        if ctx.max_elements is not None
        else contextlib.nullcontext()
    )
    built = ctx.layers.get(node.name)
    if built is not None:  # a second forward pass (one per replica) calls the same layer
        return built(*args, **kwargs, **dict(node.attrs.get("call") or {}))
    with bounded:  # applications make their weights in the constructor, other layers on call
        instance = make_layer(ctx.keras, node.attrs["class"], node.attrs.get("config") or {})
        ctx.layers[node.name] = instance
        call_kwargs = dict(node.attrs.get("call") or {})
        out = instance(*args, **kwargs, **call_kwargs)
    taken = {v.name: v for v in ctx.variables}
    for variable in instance.weights:
        name = weight_name(node.name, instance, variable)
        _check_free(ctx, name, taken.get(name))
        taken[name] = BuiltVariable(name, variable, bool(variable.trainable), node.pos, node.name)
        ctx.variables.append(taken[name])
    return out


def _check_free(ctx: Context, name: str, holder: BuiltVariable | None) -> None:
    """Refuse a layer weight named like something else: reports would merge the two."""
    if holder is not None:
        other = (
            f"a weight of layer node '{holder.node}' (line {holder.pos.line})"
            if holder.node is not None
            else f"variable '{name}' (line {holder.pos.line})"
        )
    elif name in ctx.names:
        other = ctx.names[name]
    else:
        return
    raise ValueError(
        f"its weight '{name}' has the same name as {other}; inputs, variables, nodes and "
        "layer weights share one namespace, so rename one of them"
    )


SPECIAL: dict[str, OpFn] = {
    "gradscope.stop_gradient": stop_gradient,
    "gradscope.assign": assign,
    "gradscope.layer": layer,
}


def _is_dtype_attr(key: str) -> bool:
    return key == "dtype" or key.endswith("_dtype")


def tf_function(tf: Any, target: str) -> Callable[..., Any]:
    """The TensorFlow function at ``tf.<target>``; refuses anything that is not TensorFlow's."""
    fn = functools.reduce(getattr, target.split("."), tf)
    module = getattr(fn, "__module__", "") or ""
    if not callable(fn) or not module.startswith(("tensorflow", "keras")):
        raise ValueError(f"tf.{target} is not a TensorFlow function")
    return fn  # type: ignore[no-any-return]


def call(ctx: Context, node: Node, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run one node: a gradscope op from SPECIAL, or ``tf.<target>(*args, **kwargs, **attrs)``."""
    special = SPECIAL.get(node.target)
    if special is not None:
        return special(ctx, node, args, kwargs)
    attrs = {
        k: ctx.tf.as_dtype(v) if _is_dtype_attr(k) and isinstance(v, str) else v
        for k, v in node.attrs.items()
    }
    limits.check_outputs(node.target, args, {**kwargs, **attrs})
    if ctx.max_elements is not None:
        budget.check_shape_attrs(attrs, ctx.max_elements)
    return tf_function(ctx.tf, node.target)(*args, **kwargs, **attrs)
