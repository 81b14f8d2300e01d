"""numpy, Python's operators and builtins, masked arrays, subclasses, pandas and a duck array
given eager tensors: each expression's value, type, dtype and exception, one line each.

Run as a program (``python``, ``gradscope run``) and, in-process, inside ``gradscope.watch()``
(``results()``): every line must be the same (issue 42 point 2).
"""

from __future__ import annotations

import functools
import hashlib
import operator
import re
import threading

import numpy as np
import tensorflow as tf

try:
    import pandas as pd
except ImportError:  # pragma: no cover - the dev extras install it
    pd = None


class OwnUfunc(np.ndarray):
    """An ndarray subclass with its own ``__array_ufunc__`` (as astropy's Quantity has)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [np.asarray(x) if isinstance(x, OwnUfunc) else x for x in inputs]
        if any(isinstance(x, tf.Tensor) for x in plain):
            return NotImplemented
        return ("own", getattr(ufunc, method)(*plain, **kwargs))


class Priority(np.ndarray):
    """An ndarray subclass that asks binary operators to defer to it."""

    __array_priority__ = 1000.0


class Duck:
    """A duck array (dask-style): answers only when every type numpy hands it is its own."""

    def __array_function__(self, func, types, args, kwargs):
        if not all(issubclass(t, (Duck, np.ndarray)) for t in types):
            return NotImplemented
        return ("duck", func.__name__, sorted(t.__name__ for t in types))


def _inplace(a, t, op):
    b = a.copy()
    if op == "+":
        b += t
    elif op == "-":
        b -= t
    elif op == "*":
        b *= t
    else:
        b /= t
    return b


def _scalar_inplace(s, t):
    x = s
    x += t
    return x


def expressions(t, a, s):
    """name -> a function computing it (each its own frame, as a program's line)."""
    ints = np.array([3, 4, 5], np.int64)
    masked = np.ma.masked_array(a, mask=[False, True, False])
    own = a.view(OwnUfunc)
    prio = a.view(Priority)
    strings = tf.constant(["x", "y", "z"])
    found = {
        # numpy functions and ufuncs: numpy computes them on the tensor's values
        "np.tanh(t)": lambda: np.tanh(t),
        "np.exp(t) + 1": lambda: np.exp(t) + 1.0,
        "np.add(a, t)": lambda: np.add(a, t),
        "np.maximum(a, t)": lambda: np.maximum(a, t),
        "np.add.reduce(t)": lambda: np.add.reduce(t),
        "np.mean(t)": lambda: np.mean(t),
        "np.sum(t, axis=0)": lambda: np.sum(t, axis=0),
        "np.concatenate([t, a])": lambda: np.concatenate([t, a]),
        "np.linalg.norm(t)": lambda: np.linalg.norm(t),
        "np.where(a > 0, t, a)": lambda: np.where(a > 0, t, a),
        "np.asarray(t)": lambda: np.asarray(t),
        "np.array(t, copy=True)": lambda: np.array(t, copy=True),
        "np.asarray(strings)": lambda: np.asarray(strings),
        "np.float32(t[0])": lambda: np.float32(t[0]),
        "np.int64(tf.constant(3))": lambda: np.int64(tf.constant(3)),
        "np.add(a, tf.constant([1, 2]))": lambda: np.add(a, tf.constant([1.0, 2.0])),
        # Python's operators: numpy defers to the tensor (its __array_priority__)
        "a + t": lambda: a + t,
        "a - t": lambda: a - t,
        "a * t": lambda: a * t,
        "a / t": lambda: a / t,
        "a // t": lambda: a // t,
        "a % t": lambda: a % t,
        "a ** t": lambda: a**t,
        "a.reshape(1, -1) @ t[:, None]": lambda: a.reshape(1, -1) @ t[:, None],
        "a < t": lambda: a < t,
        "a <= t": lambda: a <= t,
        "a == t": lambda: a == t,
        "a != t": lambda: a != t,
        "a > t": lambda: a > t,
        "a >= t": lambda: a >= t,
        "ints & tf.constant(6)": lambda: ints & tf.constant(6, tf.int64),
        "ints << tf.constant(1)": lambda: ints << tf.constant(1, tf.int64),
        "s * t": lambda: s * t,
        "s + t[0]": lambda: s + t[0],
        "s < t[0]": lambda: s < t[0],
        "t + a": lambda: t + a,
        "t * s": lambda: t * s,
        "a + strings": lambda: a + strings,
        # in place: numpy computes into the array (no deferral)
        "b += t": lambda: _inplace(a, t, "+"),
        "b -= t": lambda: _inplace(a, t, "-"),
        "b *= t": lambda: _inplace(a, t, "*"),
        "b /= t": lambda: _inplace(a, t, "/"),
        "x = s; x += t": lambda: _scalar_inplace(s, t),
        # dunders, called directly
        "a.__add__(t)": lambda: a.__add__(t),
        "a.__radd__(t)": lambda: a.__radd__(t),
        "a.__mul__(t)": lambda: a.__mul__(t),
        "a.__lt__(t)": lambda: a.__lt__(t),
        "a.__iadd__(t)": lambda: a.copy().__iadd__(t),
        # operators applied by C code
        "operator.add(a, t)": lambda: operator.add(a, t),
        "operator.sub(a, t)": lambda: operator.sub(a, t),
        "operator.mul(a, t)": lambda: operator.mul(a, t),
        "operator.truediv(a, t)": lambda: operator.truediv(a, t),
        "operator.lt(a, t)": lambda: operator.lt(a, t),
        "operator.iadd(a.copy(), t)": lambda: operator.iadd(a.copy(), t),
        "sum([a, t])": lambda: sum([a, t]),
        "functools.reduce(operator.add, [a, t])": lambda: functools.reduce(operator.add, [a, t]),
        "functools.reduce(np.add, [a, t])": lambda: functools.reduce(np.add, [a, t]),
        "list(map(operator.sub, [a], [t]))": lambda: list(map(operator.sub, [a], [t])),
        # builtins
        "divmod(a, t)": lambda: divmod(a, t),
        "pow(a, t)": lambda: pow(a, t),
        "max(a[0], t[0])": lambda: max(a[0], t[0]),
        "min(s, t[1])": lambda: min(s, t[1]),
        "float(t[0])": lambda: float(t[0]),
        "int(tf.constant(3))": lambda: int(tf.constant(3)),
        "abs(a - t)": lambda: abs(a - t),
        "bytes(memoryview(t))": lambda: bytes(memoryview(t)),
        # masked arrays, subclasses, a duck array
        "masked + t": lambda: masked + t,
        "np.ma.add(masked, t)": lambda: np.ma.add(masked, t),
        "own + t": lambda: own + t,
        "np.add(own, t)": lambda: np.add(own, t),
        "prio + t": lambda: prio + t,
        "t + prio": lambda: t + prio,
        "np.concatenate([Duck(), t])": lambda: np.concatenate([Duck(), t]),
        "np.mean(Duck())": lambda: np.mean(Duck()),
    }
    if pd is not None:
        series = pd.Series(a)
        found.update({
            "pd.Series(a) + t": lambda: series + t,
            "t + pd.Series(a)": lambda: t + series,
            "pd.Series(t)": lambda: pd.Series(t),
            "np.add(pd.Series(a), t)": lambda: np.add(series, t),
        })  # fmt: skip
    return found


def said(value) -> str:
    """What a value is, in one line: its type, dtype, shape and bytes (or its items)."""
    if value is NotImplemented:
        return "NotImplemented"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__}[{', '.join(said(v) for v in value)}]"
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    if isinstance(value, (str, bytes, bool, int, float)):
        return f"{kind} {value!r}"
    if pd is not None and isinstance(value, pd.Series):
        value = value.to_numpy()
    if isinstance(value, tf.Tensor):
        value = value.numpy()
    data = np.ma.getdata(value)
    mask = np.ma.getmaskarray(value).tobytes() if np.ma.isMaskedArray(value) else b""
    digest = hashlib.sha1(np.ascontiguousarray(data).tobytes() + mask).hexdigest()[:12]
    return f"{kind} {data.dtype} {data.shape} {digest}"


def failed(exc: BaseException) -> str:
    message = re.sub(r"0x[0-9a-f]+", "0x?", str(exc)).splitlines()
    return f"raised {type(exc).__module__}.{type(exc).__qualname__}: {message[:1]}"


def results() -> list[str]:
    """Each expression and what it gave, in this thread and in another (unwatched) one."""
    t = tf.constant([0.5, -1.0, 2.0])
    a = np.array([1.0, 2.0, -3.0], np.float32)
    s = np.float32(1.5)
    out = []
    for name, compute in expressions(t, a, s).items():
        try:
            out.append(f"{name}: {said(compute())}")
        except Exception as exc:
            out.append(f"{name}: {failed(exc)}")
    other: list[str] = []
    thread = threading.Thread(target=lambda: other.append(said(operator.add(a, t))))
    thread.start()
    thread.join()
    out.append(f"operator.add(a, t) in a thread: {other}")
    return out


if __name__ == "__main__":
    print("\n".join(results()))
