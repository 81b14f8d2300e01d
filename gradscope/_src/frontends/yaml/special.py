"""Checks for gradscope's own ops: ``stop_gradient``, ``assign`` and ``layer``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.context import Context, a, join, suggest
from gradscope._src.frontends.yaml.keras_config import config_problem
from gradscope._src.frontends.yaml.model import Arg, InputDef, Literal, Node, Ref, VariableDef
from gradscope._src.frontends.yaml.tree import describe_value
from gradscope._src.results.expect import Pos

TensorDef = InputDef | VariableDef
#: Layers whose ``vocabulary`` may be a file path.
_VOCABULARY_LAYERS = ("StringLookup", "IntegerLookup", "TextVectorization")


def check_special(ctx: Context, node: Node, where: str, tensors: Mapping[str, TensorDef]) -> None:
    """Report what a special node gets wrong; other nodes pass untouched."""
    checks: dict[str, Callable[[Context, Node, str, Mapping[str, TensorDef]], None]] = {
        "gradscope.stop_gradient": _stop_gradient,
        "gradscope.assign": _assign,
        "gradscope.layer": _layer,
    }
    check = checks.get(node.target)
    if check is not None:
        check(ctx, node, where, tensors)


def _pos(node: Node, key: str) -> Pos:
    return node.field_pos.get(key, node.pos)


def _stop_gradient(ctx: Context, node: Node, where: str, _: Mapping[str, TensorDef]) -> None:
    given = [*node.args, *(arg for key, arg in node.kwargs if key == "input")]
    others = [key for key, _ in node.kwargs if key != "input"]
    if len(given) != 1 or others or not isinstance(given[0], Ref):
        saw = f"{len(node.args) + len(node.kwargs)} inputs"
        if len(given) == 1 and not others:
            saw = "a literal"
        message = f"expected exactly one input naming a tensor (stop_gradient), saw {saw}"
        ctx.error(_pos(node, "inputs"), join(where, "inputs"), message)
    if node.attrs:
        ctx.error(_pos(node, "attrs"), join(where, "attrs"), "expected no attrs for stop_gradient")


def _assign(ctx: Context, node: Node, where: str, tensors: Mapping[str, TensorDef]) -> None:
    inputs_where = join(where, "inputs")
    kwargs = dict(node.kwargs)
    if node.args or set(kwargs) != {"ref", "value"}:
        saw = "a list" if node.args else "keys " + (", ".join(kwargs) or "none")
        message = f"expected a mapping {{ref: VARIABLE, value: TENSOR}} (assign), saw {saw}"
        ctx.error(_pos(node, "inputs"), inputs_where, message)
        return
    for key in node.attrs:
        if key != "begin":
            message = f"expected only the attr 'begin' for assign, saw {key!r}"
            ctx.error(_pos(node, join("attrs", key)), join(where, "attrs"), message)
    ref = kwargs["ref"]
    target = tensors.get(ref.name) if isinstance(ref, Ref) and ref.index is None else None
    if not isinstance(target, VariableDef):
        kind = ctx.kind_of(ref.name) if isinstance(ref, Ref) else None
        saw = f"{ref.name!r}, {a(kind)}" if isinstance(ref, Ref) and kind else "a literal"
        message = f"expected the name of a spec variable to write into, saw {saw}"
        ctx.error(ref.pos, join(inputs_where, "ref"), message)
        return
    if "begin" in node.attrs:
        begin = _begin(ctx, node, where, target)
        if begin is None:
            return  # the slice is unknown: nothing to compare the value with
    else:
        begin = None
    _assign_fits(ctx, kwargs["value"], join(inputs_where, "value"), target, begin, tensors)


def _begin(ctx: Context, node: Node, where: str, target: VariableDef) -> tuple[int, ...] | None:
    begin = node.attrs["begin"]
    rank = len(target.shape)
    ok = (
        isinstance(begin, list)
        and len(begin) == rank
        and all(isinstance(b, int) and not isinstance(b, bool) and b >= 0 for b in begin)
    )
    if not ok:
        what = f"a list of {rank} non-negative integers (the rank of {target.name})"
        saw = describe_value(begin)
        ctx.error(
            _pos(node, "attrs.begin"), join(where, "attrs.begin"), f"expected {what}, saw {saw}"
        )
        return None
    return tuple(begin)


def _assign_fits(
    ctx: Context,
    value: Arg,
    where: str,
    target: VariableDef,
    begin: tuple[int, ...] | None,
    tensors: Mapping[str, TensorDef],
) -> None:
    shape, dtype = static_shape(value, tensors)
    if dtype is not None and dtype != target.dtype:
        message = f"expected a {target.dtype} value like {target.name}, saw a {dtype} tensor"
        ctx.error(value.pos, where, message)
    if shape is None:
        return
    if begin is None:
        fits = shape == target.shape
        space = f"the shape of {target.name}, {list(target.shape)}"
    else:
        fits = len(shape) == len(begin) and all(
            b + s <= d for b, s, d in zip(begin, shape, target.shape, strict=True)
        )
        space = f"a shape that fits {list(target.shape)} from begin {list(begin)}"
    if not fits:
        ctx.error(value.pos, where, f"expected {space}, saw shape {list(shape)}")


def static_shape(
    arg: Arg, tensors: Mapping[str, TensorDef]
) -> tuple[tuple[int, ...] | None, str | None]:
    """The shape (and dtype, for references) of an input when known without running TF."""
    if isinstance(arg, Ref):
        tensor = tensors.get(arg.name) if arg.index is None else None
        return (tensor.shape, tensor.dtype) if tensor else (None, None)
    if isinstance(arg, Literal):
        return (), None
    if any(isinstance(item, Ref) for item in arg.items):
        return None, None  # a list of tensors: their shapes are known only to TensorFlow
    inner = {static_shape(item, tensors)[0] for item in arg.items}
    if len(inner) > 1 or None in inner:
        return None, None
    first = inner.pop() if inner else ()
    assert first is not None
    return (len(arg.items), *first), None


def _layer(ctx: Context, node: Node, where: str, _: Mapping[str, TensorDef]) -> None:
    attrs_where = join(where, "attrs")
    for key in node.attrs:
        if key not in ("class", "config", "call"):
            message = f"expected class, config or call, saw {key!r}" + suggest(key, ("config",))
            ctx.error(_pos(node, join("attrs", key)), attrs_where, message)
    if not node.args and not node.kwargs:
        ctx.error(
            node.pos, join(where, "inputs"), "expected at least one input for a layer, saw none"
        )
    cls = node.attrs.get("class")
    if not _layer_class(ctx, cls, _pos(node, "attrs.class"), join(attrs_where, "class")):
        return
    for key in ("config", "call"):
        value = node.attrs.get(key, {})
        if not isinstance(value, dict):
            message = f"expected a mapping, saw {describe_value(value)}"
            ctx.error(_pos(node, join("attrs", key)), join(attrs_where, key), message)
    call = node.attrs.get("call", {})
    problem = config_problem(call) if isinstance(call, dict) else None
    if problem:
        ctx.error(_pos(node, "attrs.call"), join(attrs_where, "call"), problem)
    config = node.attrs.get("config", {})
    if isinstance(config, dict):
        problem = _config_problem(str(cls), config)
        if problem:
            ctx.error(_pos(node, "attrs.config"), join(attrs_where, "config"), problem)


def _layer_class(ctx: Context, cls: Any, pos: Pos, where: str) -> bool:
    if isinstance(cls, str) and cls in catalog.REFUSED_LAYERS:
        ctx.error(pos, where, f"refused: {cls} {catalog.REFUSED_LAYERS[cls]}")
        return False
    names = catalog.layer_classes() | catalog.applications()
    if isinstance(cls, str) and cls in names:
        return True
    hint = suggest(cls, names) if isinstance(cls, str) else ""
    what = "a keras.layers class or keras.applications model name (Dense, ResNet50, ...)"
    ctx.error(pos, where, f"expected {what}, saw {describe_value(cls)}{hint}")
    return False


def _config_problem(cls: str, config: dict[str, Any]) -> str | None:
    if cls in catalog.applications() and config.get("weights") is not None:
        return "refused: pretrained weights are downloaded from the network; write weights: null"
    if cls in _VOCABULARY_LAYERS and isinstance(config.get("vocabulary"), str):
        return "refused: a vocabulary given as a string is read from a file; give a list"
    return _nested_problem(config) or config_problem(config)


#: Config keys that name files Keras would read, at any depth of a layer's config.
_FILE_KEYS = ("vocabulary", "filepath", "file_path", "idf_weights")


def _nested_problem(value: Any) -> str | None:
    """Serialized Keras objects that would import modules or run code, and file names."""
    if isinstance(value, list):
        return next((p for p in map(_nested_problem, value) if p), None)
    if not isinstance(value, dict):
        return None
    for key in _FILE_KEYS:
        if isinstance(value.get(key), str):
            return f"refused: {key} {value[key]!r} names a file Keras would read; give values"
    if value.get("weights") is not None:
        return "refused: weights must be null (weights are never loaded from files)"
    module = value.get("module")
    if isinstance(module, str) and not (module == "keras" or module.startswith("keras.")):
        return f"refused: a serialized object from module {module!r} would import it"
    name = value.get("class_name")
    if isinstance(name, str) and (name in catalog.REFUSED_LAYERS or name.startswith("__")):
        return f"refused: a serialized {name} runs code"
    return next((p for p in map(_nested_problem, value.values()) if p), None)
