"""A fix as a text edit: where a fix is a change at one known line whose text says exactly how,
the lines to replace and their replacement (``results.fix.Edit``), for agents and for
``gradscope fix``.

Only fixes that keep every forward value are edits, so applying one changes where gradients
flow and nothing else:

- ``remove-stop-gradient``: ``tf.stop_gradient(h)`` becomes ``h`` (a spec's
  ``op: stop_gradient`` becomes ``op: identity``);
- ``straight-through``: ``tf.round(x)`` (``floor``, ``ceil``, ``rint``) becomes
  ``(x + tf.stop_gradient(tf.round(x) - x))``, the same values with a gradient of 1.

The call is found with :mod:`ast` on the line the fix names; when the line holds no such call,
or more than one, or the file cannot be read, there is no edit (the fix's text stays the fix).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
import re
from collections.abc import Callable

from gradscope._src.location import Location
from gradscope._src.results.fix import Edit, Fix

#: Files larger than this are not read for an edit (a generated module).
MAX_BYTES = 2_000_000
#: The rounding calls a straight-through edit wraps (their last attribute).
ROUNDING = frozenset({"round", "floor", "ceil", "rint"})
_SPEC_STOP = re.compile(r"\bop:\s*stop_gradient\b")


def with_edit(fix: Fix | None) -> Fix | None:
    """``fix`` with its :class:`Edit` when it is a text edit at a known line (else as is)."""
    if fix is None or fix.edit is not None or fix.kind not in _EDITS:
        return fix
    at = Location.parse(fix.where)
    if at is None or not at.line:
        return fix
    text = _read(at.file)
    if text is None:
        return fix
    found = _EDITS[fix.kind](text, at.line, at.file)
    return fix if found is None else dataclasses.replace(fix, edit=found)


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _remove_stop_gradient(text: str, line: int, file: str) -> Edit | None:
    if file.endswith((".yaml", ".yml")):
        lines = text.splitlines()
        if not 0 < line <= len(lines) or len(_SPEC_STOP.findall(lines[line - 1])) != 1:
            return None
        old = lines[line - 1]
        return Edit(file, line, line, old, _SPEC_STOP.sub("op: identity", old))
    call = _one_call(text, line, lambda name: name == "stop_gradient", args=1)
    if call is None:
        return None
    return _replace(text, file, call, _segment(text, call.args[0]))


def _straight_through(text: str, line: int, file: str) -> Edit | None:
    call = _one_call(text, line, lambda name: name in ROUNDING, args=1)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None  # a bare `round(x)`: Python's, or an import whose module we cannot name
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value  # type: ignore[assignment]
    if not isinstance(root, ast.Name):
        return None
    x, whole = _segment(text, call.args[0]), _segment(text, call)
    if "\n" in x:
        return None
    return _replace(text, file, call, f"({x} + {root.id}.stop_gradient({whole} - {x}))")


def _one_call(text: str, line: int, named: Callable[[str], bool], args: int) -> ast.Call | None:
    """The one call on ``line`` whose function's last name ``named`` accepts, with ``args``
    positional arguments and no keywords; None when there is none or more than one."""
    tree = _tree(text)
    if tree is None:
        return None
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and node.lineno <= line <= (node.end_lineno or node.lineno)
        and named(_last_name(node.func) or "")
        and len(node.args) == args
        and not node.keywords
        and not isinstance(node.args[0], ast.Starred)
    ]
    return found[0] if len(found) == 1 else None


@functools.lru_cache(maxsize=8)
def _tree(text: str) -> ast.Module | None:
    """The module's tree, parsed once for the many pairs one line cuts."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _segment(text: str, node: ast.AST) -> str:
    return ast.get_source_segment(text, node) or ""


def _replace(text: str, file: str, node: ast.expr, new: str) -> Edit | None:
    """The whole lines ``node`` spans, with ``node``'s text replaced by ``new``."""
    if not new or node.end_lineno is None or node.end_col_offset is None:
        return None
    lines = text.splitlines()
    first, last = node.lineno, node.end_lineno
    old = "\n".join(lines[first - 1 : last])
    # ast's columns count UTF-8 bytes: cut the first and last lines as bytes
    head = lines[first - 1].encode()[: node.col_offset].decode()
    tail = lines[last - 1].encode()[node.end_col_offset :].decode()
    return Edit(file, first, last, old, head + new + tail)


_EDITS = {
    "remove-stop-gradient": _remove_stop_gradient,
    "straight-through": _straight_through,
}
