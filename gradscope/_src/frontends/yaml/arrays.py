"""Explicit values, shapes and ranges: nested YAML lists -> nested tuples with a known shape."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.context import Context, is_number, join
from gradscope._src.frontends.yaml.tree import YNode, YScalar, YSeq, describe


@dataclass(frozen=True)
class Values:
    """Values read from YAML: nested tuples (or one number) and the shape they have."""

    data: Any
    shape: tuple[int, ...]


class _Stop(Exception):
    """Ends reading a values list at its first problem (one message per list is enough)."""


def read_shape(ctx: Context, node: YNode, where: str) -> tuple[int, ...] | None:
    """A shape: a list of non-negative integers within the element limit."""
    what = "a list of non-negative integers"
    if not isinstance(node, YSeq):
        ctx.expected(node, where, what)
        return None
    dims: list[int] = []
    for index, item in enumerate(node.items):
        value = item.value if isinstance(item, YScalar) else None
        if not is_number(item) or not isinstance(value, int) or value < 0:
            ctx.expected(item, join(where, index), "a non-negative integer")
            return None
        dims.append(value)
    shape = tuple(dims)
    count = math.prod(shape)
    if count > ctx.max_elements:
        ctx.error(node.pos, where, _too_many(ctx, f"{count} elements"))
        return None
    return shape


def _too_many(ctx: Context, saw: str) -> str:
    return (
        f"expected at most {ctx.max_elements} elements "
        f"(raise the limit with --max-elements), saw {saw}"
    )


def read_values(ctx: Context, node: YNode, where: str, dtype: str) -> Values | None:
    """Explicit values: a number (a scalar) or a rectangular nested list of numbers.

    Every number must suit ``dtype``: booleans for ``bool``, integers in range for integer
    dtypes, any number for floating and complex dtypes.
    """
    reader = _Reader(ctx, dtype)
    try:
        data, shape = reader.read(node, where)
    except _Stop:
        return None
    return Values(data, shape)


class _Reader:
    def __init__(self, ctx: Context, dtype: str) -> None:
        self.ctx = ctx
        self.dtype = dtype
        self.kind = catalog.dtype_kind(dtype)
        self.most = _dtype_span(dtype)[1] if self.kind not in ("int", "bool") else 0.0
        self.count = 0

    def read(self, node: YNode, where: str) -> tuple[Any, tuple[int, ...]]:
        if isinstance(node, YSeq):
            return self._list(node, where)
        if isinstance(node, YScalar):
            self.count += 1
            if self.count > self.ctx.max_elements:
                self.ctx.error(node.pos, where, _too_many(self.ctx, "more"))
                raise _Stop
            return self._scalar(node, where), ()
        self.ctx.expected(node, where, f"a number or a list of {self.dtype} values")
        raise _Stop

    def _list(self, node: YSeq, where: str) -> tuple[Any, tuple[int, ...]]:
        items: list[Any] = []
        first: tuple[int, ...] | None = None
        for index, item in enumerate(node.items):
            data, shape = self.read(item, join(where, index))
            if first is None:
                first = shape
            elif shape != first:
                what = "a number" if not first else f"a list of shape {list(first)}"
                self.ctx.expected(item, join(where, index), f"{what} like item 0 (ragged values)")
                raise _Stop
            items.append(data)
        return tuple(items), (len(items), *(first or ()))

    def _scalar(self, node: YScalar, where: str) -> Any:
        value = node.value
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            self.ctx.expected(node, where, "true or false (dtype bool)")
            raise _Stop
        if not is_number(node):
            self.ctx.expected(node, where, f"a number (dtype {self.dtype})")
            raise _Stop
        if self.kind != "int":
            number = float(value)  # type: ignore[arg-type]
            most = self.most
            if math.isfinite(number) and abs(number) > most:
                self.ctx.expected(node, where, f"a number a {self.dtype} holds (at most {most:g})",
                                  " (it would silently become inf)")  # fmt: skip
                raise _Stop
            return number
        low, high = catalog.int_bounds(self.dtype)
        if not isinstance(value, int) or not low <= value <= high:
            self.ctx.expected(node, where, f"an integer from {low} to {high} (dtype {self.dtype})")
            raise _Stop
        return value


#: The largest finite value of each floating dtype (``numpy.finfo``), without NumPy.
FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
             "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}  # fmt: skip


def _dtype_span(dtype: str) -> tuple[float, float]:
    """What a range may span for ``dtype``: ``[min, max + 1]`` for integers (high is exclusive)."""
    if catalog.dtype_kind(dtype) == "int":
        low, high = catalog.int_bounds(dtype)
        return low, high + 1
    most = FLOAT_MAX.get(dtype.replace("complex64", "float32").replace("complex128", "float64"))
    return -(most or math.inf), most or math.inf


def read_range(ctx: Context, node: YNode, where: str, dtype: str) -> tuple[float, float] | None:
    """A ``[low, high)`` pair of finite numbers with ``low < high`` (integers for int dtypes)."""
    kind = catalog.dtype_kind(dtype)
    if kind == "bool":
        ctx.expected(node, where, "no range for dtype bool (booleans are drawn uniformly)")
        return None
    what = "[low, high] with two integers" if kind == "int" else "[low, high] with two numbers"
    if not isinstance(node, YSeq) or len(node.items) != 2:
        ctx.expected(node, where, what)
        return None
    low, high = node.items
    for item in (low, high):
        value = item.value if isinstance(item, YScalar) else None
        ok_type = isinstance(value, int) if kind == "int" else isinstance(value, (int, float))
        if not is_number(item) or not ok_type or not math.isfinite(value):  # type: ignore[arg-type]
            ctx.expected(item, where, what)
            return None
    assert isinstance(low, YScalar) and isinstance(high, YScalar)
    pair = (low.value, high.value)
    least, most = _dtype_span(dtype)
    low_value, high_value = cast(float, pair[0]), cast(float, pair[1])  # numbers, checked above
    if not (least <= low_value and high_value <= most) or not math.isfinite(
        float(high_value) - float(low_value)
    ):
        ctx.error(
            node.pos,
            where,
            f"expected a range within what {dtype} holds, [{least:g}, {most:g}], and no "
            "wider than that"
            if kind != "int"
            else f"expected a range within what {dtype} holds, [{least}, {most}) ",
        )
        return None
    if not pair[0] < pair[1]:  # type: ignore[operator]
        saw = f"[{describe(low)}, {describe(high)}]"
        ctx.error(node.pos, where, f"expected low < high (the range is [low, high)), saw {saw}")
        return None
    return pair  # type: ignore[return-value]
