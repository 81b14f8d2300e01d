"""While gradscope watches, numpy given an eager tensor computes what it computed before, and
the tensors it read are noted (``numpy_calls.py``): each expression below is evaluated by bare
TensorFlow and numpy, then with the overrides on eager tensors, and the results compared."""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from gradscope._src.frontends.program import numpy_calls

pytestmark = pytest.mark.tf


@contextlib.contextmanager
def overridden(took: Callable[[Any, str], None]) -> Iterator[None]:
    from tensorflow.python.framework import ops

    base = ops._EagerTensorBase
    assert "__array_ufunc__" not in base.__dict__ and "__array_function__" not in base.__dict__
    base.__array_ufunc__ = numpy_calls.ufunc_override(took, base)  # type: ignore[attr-defined]
    base.__array_function__ = numpy_calls.function_override(took, base)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del base.__array_ufunc__, base.__array_function__  # type: ignore[attr-defined]


def _expressions() -> dict[str, Callable[[Any, Any, Any], Any]]:
    """name -> f(t, a, s): t a tensor, a an ndarray, s a numpy scalar (each f is its own
    frame, so an operator runs as the program's would)."""

    def inplace(t: Any, a: Any, s: Any) -> Any:
        b = a.copy()
        b += t
        return b

    def scalar_inplace(t: Any, a: Any, s: Any) -> Any:
        x = s
        x += t
        return x

    return {
        "np.tanh(t)": lambda t, a, s: np.tanh(t),
        "np.exp(t) + 1": lambda t, a, s: np.exp(t) + 1.0,
        "np.add(a, t)": lambda t, a, s: np.add(a, t),
        "np.maximum(a, t)": lambda t, a, s: np.maximum(a, t),
        "np.add.reduce(t)": lambda t, a, s: np.add.reduce(t),
        "np.mean(t)": lambda t, a, s: np.mean(t),
        "np.sum(t, axis=0)": lambda t, a, s: np.sum(t, axis=0),
        "np.concatenate([t, a])": lambda t, a, s: np.concatenate([t, a]),
        "np.linalg.norm(t)": lambda t, a, s: np.linalg.norm(t),
        "np.where(a > 0, t, a)": lambda t, a, s: np.where(a > 0, t, a),
        "a + t": lambda t, a, s: a + t,
        "a - t": lambda t, a, s: a - t,
        "a * t": lambda t, a, s: a * t,
        "a / t": lambda t, a, s: a / t,
        "a ** t": lambda t, a, s: a**t,
        "a @ t": lambda t, a, s: a.reshape(1, -1) @ np.ones((3, 1), np.float32) * t,
        "a < t": lambda t, a, s: a < t,
        "a == t": lambda t, a, s: a == t,
        "s * t": lambda t, a, s: s * t,
        "t + a": lambda t, a, s: t + a,
        "a += t": inplace,
        "s += t": scalar_inplace,
        "functools.reduce(np.add)": lambda t, a, s: functools.reduce(np.add, [a, t]),
        "np.float32(t[0])": lambda t, a, s: np.float32(t[0]),
    }


def _same(x: Any, y: Any) -> bool:
    if type(x) is not type(y):
        return False
    if hasattr(x, "numpy"):
        x, y = x.numpy(), y.numpy()
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()


@pytest.mark.parametrize("name", list(_expressions()))
def test_numpy_on_a_tensor_computes_what_it_did_and_notes_the_tensor(name: str) -> None:
    import tensorflow as tf

    f = _expressions()[name]
    t = tf.constant([0.5, -1.0, 2.0])
    a, s = np.array([1.0, 2.0, -3.0], np.float32), np.float32(1.5)
    bare = f(t, a, s)
    seen: list[tuple[list[int], str]] = []

    def took(values: Any, how: str) -> None:
        ids = [id(v) for v in numpy_calls.tensors_in(values, type(t).__mro__[1])]
        seen.append((ids, how))

    with overridden(took):
        watched = f(t, a, s)
    assert _same(bare, watched), (bare, watched)
    tensor_first = name.startswith("t ") or name.startswith("np.float32(")
    if isinstance(bare, tf.Tensor) or tensor_first:
        return  # TensorFlow computed it: nothing left TensorFlow
    assert any(id(t) in ids for ids, _ in seen), seen
    assert all(how.startswith("np.") and how.endswith("()") for _, how in seen)


def test_operator_applied_from_c_code_is_the_one_case_told_as_a_call() -> None:
    """``operator.add(a, t)``: no frame runs the operator, so numpy's result, where Python
    gives TensorFlow's (the module docstring names this case)."""
    import tensorflow as tf

    t, a = tf.constant([1.0, 2.0]), np.array([3.0, 4.0], np.float32)
    assert isinstance(operator.add(a, t), tf.Tensor)
    with overridden(lambda values, how: None):
        assert isinstance(operator.add(a, t), np.ndarray)


def test_an_array_function_is_named_not_the_ufuncs_it_calls() -> None:
    """``np.sum(t)`` runs ``np.add.reduce`` on the tensor inside: the line's exit is np.sum."""
    import tensorflow as tf

    t = tf.constant([1.0, 2.0])
    seen: list[str] = []
    with overridden(lambda values, how: seen.append(how)):
        total = np.sum(t)
        later = np.tanh(t)
    assert total == np.sum(np.array([1.0, 2.0], np.float32))
    assert later.dtype == np.float32
    assert seen == ["np.sum()", "np.tanh()"]
