"""``tf.custom_gradient``: the user's gradient function behind an op, and its line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradscope._src import tfcompat


def has_own_gradient(op: Any) -> bool:
    """``tf.custom_gradient`` (and ``gradient_override_map``) mark the op with its gradient."""
    return "_gradient_op_type" in op.node_def.attr


def function_of(
    op: Any, display: Callable[[str], str] = str, *, with_grad: bool = False
) -> tuple[str, str] | None:
    """``(name, "FILE:LINE")`` of the user's gradient function behind a ``tf.custom_gradient``
    op: TensorFlow registers a wrapper under the op's ``_gradient_op_type``, holding the
    user's function in its closure (best effort; None when it is not found)."""
    try:
        tf_ops = tfcompat.get("ops")

        wrapper = tf_ops._gradient_registry.lookup(op.get_attr("_gradient_op_type").decode())
    except (LookupError, ValueError, AttributeError, TypeError):
        return None
    seen: set[int] = set()
    stack = [wrapper]
    while stack:
        fn = stack.pop()
        if id(fn) in seen or len(seen) > 50:
            continue
        seen.add(id(fn))
        module = getattr(fn, "__module__", "") or ""
        code = getattr(fn, "__code__", None)
        if code is not None and not module.startswith(("tensorflow", "keras")):
            return named(fn, display, with_grad=with_grad)
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if callable(value):
                stack.append(value)
    return None


def named(fn: Any, display: Callable[[str], str] = str, *,
          with_grad: bool = False) -> tuple[str, str]:  # fmt: skip
    """``(name, "FILE:LINE")`` of a user's gradient function: ``cube.<locals>.grad`` is
    ``cube`` (the function that made the custom gradient), ``cube.grad`` ``with_grad``."""
    code = fn.__code__
    parts = [p for p in fn.__qualname__.split(".") if p != "<locals>"]
    name = parts[-2] if len(parts) > 1 else parts[0]
    if with_grad and len(parts) > 1:
        name = f"{name}.{parts[-1]}"
    return name, f"{display(code.co_filename)}:{code.co_firstlineno}"


def eager_site(display: Callable[[str], str], depth: int = 16) -> tuple[str, str] | None:
    """Called while an eager op runs: ``named`` of the ``grad_fn`` when the op is the
    ``Identity`` an eager ``tf.custom_gradient`` puts on its results (its gradient is the
    ``grad_fn``'s), else None."""
    import sys

    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None:
            return None
        if frame.f_code.co_name == "_eager_mode_decorator":
            fn = frame.f_locals.get("grad_fn")
            return named(fn, display, with_grad=True) if hasattr(fn, "__code__") else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def site(op: Any, display: Callable[[str], str]) -> tuple[str, str] | None:
    """``("cube.grad", "FILE:LINE")``: the custom gradient and the ``grad_fn`` that decides
    what ``op``'s inputs get (a cut there is the ``grad_fn`` returning None), or None when
    ``op`` has TensorFlow's own gradient."""
    if not has_own_gradient(op):
        return None
    return function_of(op, display, with_grad=True)
