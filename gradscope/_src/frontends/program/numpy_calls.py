"""numpy functions and ufuncs given an eager tensor: seen, and computed as they were before.

numpy reads an eager tensor through the buffer protocol: ``np.tanh(model(x))`` or
``np.mean(w * 2.0)`` runs no Python method of the tensor, so nothing would say that the value
left TensorFlow there (and the loss rebuilt from it by ``tf.convert_to_tensor`` gets None).
While gradscope watches, eager tensors get numpy's two override protocols, NEP 13's
``__array_ufunc__`` and NEP 18's ``__array_function__``: each notes the tensors it is given,
then computes exactly what numpy computed without it:

- an array function (``np.mean``, ``np.concatenate``): its own implementation, which numpy's
  default dispatch calls;
- a ufunc (``np.tanh``, ``np.maximum``, ``np.add.reduce``): the ufunc on the tensors' numpy
  values (the same coercion numpy made), except where numpy, without the override, handed the
  operation back to the tensor: a binary operator with a numpy array or scalar on its left
  (``a + t``, ``a < t``, ``a += t`` too). numpy defers there to the tensor's
  ``__array_priority__``; a type with an ``__array_ufunc__`` is deferred to only when it is
  None, so the override does what Python did next: the tensor's reflected operator
  (``t.__radd__(a)``, ``t.__gt__(a)``), a tensor as before. An operator is told from a call
  (``np.add(a, t)``, numpy's result) by the instruction the calling frame runs (a binary
  operator or a comparison); the one case told wrongly is an operator applied by C code
  (``operator.add(a, t)``, ``sum([a, t])``) to a numpy value and a tensor in that order,
  which then gets numpy's result.

A call that also involves another type with its own override (a pandas object, a dask array)
is left to that type, as before: the override returns ``NotImplemented``.
"""

from __future__ import annotations

import dis
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

#: A ufunc a binary operator calls -> the tensor's method Python calls once numpy defers.
REFLECTED = {"add": "__radd__", "subtract": "__rsub__", "multiply": "__rmul__",
             "matmul": "__rmatmul__", "divide": "__rtruediv__", "true_divide": "__rtruediv__",
             "floor_divide": "__rfloordiv__", "remainder": "__rmod__", "divmod": "__rdivmod__",
             "power": "__rpow__", "left_shift": "__rlshift__", "right_shift": "__rrshift__",
             "bitwise_and": "__rand__", "bitwise_or": "__ror__", "bitwise_xor": "__rxor__",
             "less": "__gt__", "less_equal": "__ge__", "greater": "__lt__",
             "greater_equal": "__le__", "equal": "__eq__", "not_equal": "__ne__"}  # fmt: skip

Took = Callable[[Sequence[Any], str], None]

#: Whether an array function's implementation runs on this thread: the ufuncs it calls on the
#: tensors (``np.sum`` calls ``np.add.reduce``) are its own, and the program's line names it.
_inside = threading.local()


def tensors_in(values: Sequence[Any], base: type, depth: int = 2) -> Iterator[Any]:
    """The instances of ``base`` among ``values``, lists and tuples opened ``depth`` deep."""
    for value in values:
        if isinstance(value, base):
            yield value
        elif depth and isinstance(value, (list, tuple)):
            yield from tensors_in(value, base, depth - 1)


def _foreign(values: Sequence[Any], base: type) -> bool:
    """Whether some value has a numpy override of its own (neither numpy's nor ``base``'s)."""
    return any(
        not isinstance(v, (base, np.ndarray, np.generic))
        and getattr(type(v), "__array_ufunc__", None) is not None
        for v in values
    )


def _operator(frame: Any) -> bool:
    """Whether ``frame`` runs a binary operator or a comparison now (not a call)."""
    code = frame.f_code.co_code
    at = frame.f_lasti
    if not 0 <= at < len(code):
        return False
    name = str(dis.opname[code[at]])
    return name.startswith(("BINARY_", "INPLACE_")) or name == "COMPARE_OP"


def ufunc_override(took: Took, base: type) -> Callable[..., Any]:
    """``__array_ufunc__`` for ``base``: ``took(tensors, how)``, then numpy's own result."""

    def __array_ufunc__(self: Any, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        if _foreign(inputs, base):
            return NotImplemented
        if not getattr(_inside, "function", False):
            took(inputs, f"np.{ufunc.__name__}()")
        reflected = REFLECTED.get(ufunc.__name__)
        if (reflected is not None and method == "__call__"
                and len(inputs) == 2 and not isinstance(inputs[0], base)
                and isinstance(inputs[1], base) and _operator(sys._getframe(1))):  # fmt: skip
            return getattr(inputs[1], reflected)(inputs[0])
        values = [np.asarray(x) if isinstance(x, base) else x for x in inputs]
        return getattr(ufunc, method)(*values, **kwargs)

    return __array_ufunc__


def function_override(took: Took, base: type) -> Callable[..., Any]:
    """``__array_function__`` for ``base``: ``took(tensors, how)``, then the function's own
    implementation."""

    def __array_function__(self: Any, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if not all(issubclass(t, (base, np.ndarray)) for t in types):
            return NotImplemented
        outer = not getattr(_inside, "function", False)
        if outer:
            took([*args, *kwargs.values()], f"np.{func.__name__}()")
        _inside.function = True
        try:
            return func._implementation(*args, **kwargs)
        finally:
            _inside.function = not outer

    return __array_function__
