"""The ``inputs`` and ``variables`` sections -> InputDef and VariableDef."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.arrays import Values, read_range, read_shape, read_values
from gradscope._src.frontends.yaml.context import Context, is_number, join, suggest
from gradscope._src.frontends.yaml.forward import budget
from gradscope._src.frontends.yaml.model import InputDef, VariableDef
from gradscope._src.frontends.yaml.tree import YEntry, YMap, YNode, YScalar
from gradscope._src.results.expect import Pos

INPUT_FIELDS = ("shape", "dtype", "values", "range")
VARIABLE_FIELDS = ("shape", "dtype", "values", "range", "init", "trainable")


@dataclass(frozen=True)
class _Common:
    """What inputs and variables share."""

    shape: tuple[int, ...]
    dtype: str
    values: Any
    range: tuple[float, float] | None


def read_inputs(ctx: Context, node: YNode | None) -> list[InputDef]:
    """Every entry of the ``inputs`` section (None or null: no inputs)."""
    out = []
    for entry in _entries(ctx, node, "inputs"):
        where = join("inputs", entry.key)
        ctx.define(entry.key, "input", entry.key_pos, where, -1)
        found = _fields(ctx, entry, where, INPUT_FIELDS)
        common = _common(ctx, found, entry, where) if found is not None else None
        if common is not None:
            out.append(InputDef(entry.key, *_tuple(common), entry.key_pos))
    return out


def read_variables(ctx: Context, node: YNode | None) -> list[VariableDef]:
    """Every entry of the ``variables`` section (None or null: no variables)."""
    out = []
    for entry in _entries(ctx, node, "variables"):
        where = join("variables", entry.key)
        ctx.define(entry.key, "variable", entry.key_pos, where, -1)
        found = _fields(ctx, entry, where, VARIABLE_FIELDS)
        if found is None:
            continue
        common = _common(ctx, found, entry, where)
        init = _init(ctx, found, where, common)
        trainable = _trainable(ctx, found.get("trainable"), where)
        if common is None or init is None or trainable is None:
            continue
        shape, dtype, values, rng = _tuple(common)
        out.append(
            VariableDef(entry.key, shape, dtype, init, values, rng, trainable, entry.key_pos)
        )
    return out


def _tuple(c: _Common) -> tuple[tuple[int, ...], str, Any, tuple[float, float] | None]:
    return c.shape, c.dtype, c.values, c.range


def _entries(ctx: Context, node: YNode | None, where: str) -> list[YEntry]:
    if node is None or (isinstance(node, YScalar) and node.value is None):
        return []
    mapping = ctx.mapping(node, where, "a mapping of names to definitions")
    return list(mapping) if mapping is not None else []


def _fields(
    ctx: Context, entry: YEntry, where: str, allowed: tuple[str, ...]
) -> dict[str, YEntry] | None:
    value = entry.value
    if is_number(value):  # the shorthand `scale: 2.5`
        return {"values": YEntry("values", value.pos, value)}
    if isinstance(value, YMap):
        return ctx.fields(value, where, allowed)
    ctx.expected(value, where, "a mapping like {shape: [2, 3]} or a number")
    return None


def _common(ctx: Context, found: dict[str, YEntry], entry: YEntry, where: str) -> _Common | None:
    dtype = _dtype(ctx, found.get("dtype"), join(where, "dtype"))
    if dtype is None:
        return None
    shape_entry, values_entry, range_entry = (found.get(k) for k in ("shape", "values", "range"))
    shape = read_shape(ctx, shape_entry.value, join(where, "shape")) if shape_entry else ()
    values: Values | None = None
    if values_entry is not None:
        values = read_values(ctx, values_entry.value, join(where, "values"), dtype)
        if values is None:
            return None
    rng = None
    if range_entry is not None:
        if values_entry is not None:
            ctx.expected(range_entry.value, join(where, "range"), "either values or range")
            return None
        rng = read_range(ctx, range_entry.value, join(where, "range"), dtype)
        if rng is None:
            return None
    if shape is None:
        return None
    if values is None:
        if shape_entry is None:
            ctx.error(entry.key_pos, where, "expected a shape or values field, saw neither")
            return None
        return _Common(shape, dtype, None, rng)
    assert values_entry is not None
    return _with_values(ctx, values, shape if shape_entry else None, values_entry, where, dtype)


def _with_values(
    ctx: Context,
    values: Values,
    shape: tuple[int, ...] | None,
    entry: YEntry,
    where: str,
    dtype: str,
) -> _Common | None:
    if shape is None or shape == values.shape:
        return _Common(values.shape, dtype, values.data, None)
    if values.shape == ():  # one number fills the whole shape
        return _Common(shape, dtype, values.data, None)
    message = f"expected values of shape {list(shape)} (the shape field), saw shape "
    ctx.error(entry.value.pos, join(where, "values"), message + str(list(values.shape)))
    return None


def _dtype(ctx: Context, entry: YEntry | None, where: str) -> str | None:
    if entry is None:
        return catalog.DEFAULT_DTYPE
    return read_dtype(ctx, entry.value, where)


def read_dtype(ctx: Context, node: YNode, where: str) -> str | None:
    """A dtype name out of :data:`catalog.DTYPES`."""
    value = node.value if isinstance(node, YScalar) else None
    if isinstance(value, str) and value in catalog.DTYPES:
        return value
    hint = suggest(value, catalog.DTYPES) if isinstance(value, str) else ""
    ctx.expected(node, where, "a dtype name (float32, int32, bool, ...)", hint)
    return None


def _init(ctx: Context, found: dict[str, YEntry], where: str, common: _Common | None) -> str | None:
    entry, rng = found.get("init"), found.get("range")
    if entry is None:
        unsigned = common is not None and common.dtype.startswith("uint")
        if unsigned and rng is None and "values" not in found and "dtype" in found:
            ctx.error(
                found["dtype"].value.pos,
                join(where, "init"),
                f"the default init, normal, draws negative values, which {common.dtype} "  # type: ignore[union-attr]
                "cannot hold; give init: zeros, ones, or uniform with a range",
            )
            return None
        return "uniform" if rng is not None else "normal"
    where = join(where, "init")
    value = entry.value.value if isinstance(entry.value, YScalar) else None
    names = (*catalog.BUILTIN_INITS, *sorted(catalog.keras_initializers()))
    if not isinstance(value, str) or value not in names:
        hint = suggest(value, names) if isinstance(value, str) else ""
        what = "normal, uniform, zeros, ones or a Keras initializer name"
        ctx.expected(entry.value, where, what, hint)
        return None
    return _init_fits(ctx, entry, where, value, found, common)


def _init_fits(
    ctx: Context,
    entry: YEntry,
    where: str,
    init: str,
    found: dict[str, YEntry],
    common: _Common | None,
) -> str | None:
    pos: Pos = entry.value.pos
    if "values" in found:
        ctx.error(pos, where, f"expected either values or init, saw both (init {init!r})")
        return None
    if "range" in found and init != "uniform":
        ctx.error(pos, where, f"expected init: uniform with a range, saw {init!r}")
        return None
    keras = init not in catalog.BUILTIN_INITS
    if keras and common is not None and catalog.dtype_kind(common.dtype) != "float":
        message = f"expected a built-in init for dtype {common.dtype}, saw the Keras {init!r}"
        ctx.error(pos, where, message + " (Keras initializers need a floating dtype)")
        return None
    slow = budget.init_problem(init, common.shape) if common is not None else None
    if slow is not None:
        ctx.error(pos, where, slow)
        return None
    if init == "normal" and common is not None and common.dtype.startswith("uint"):
        message = f"expected an init that {common.dtype} can hold, saw 'normal'"
        ctx.error(pos, where, message + " (it draws negative values; use uniform or zeros)")
        return None
    return init


def _trainable(ctx: Context, entry: YEntry | None, where: str) -> bool | None:
    if entry is None:
        return True
    value = entry.value.value if isinstance(entry.value, YScalar) else None
    if isinstance(value, bool):
        return value
    ctx.expected(entry.value, join(where, "trainable"), "true or false")
    return None
