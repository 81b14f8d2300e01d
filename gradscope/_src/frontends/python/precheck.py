"""What can be said of a target string before TensorFlow is imported and before user code runs.

A wrong target (no such file, no such function, pytest's ``file.py::fn``, a training script
given where a target is expected) must not cost the 3 s of importing TensorFlow, nor run the
script's training at import, before the user hears about it. Everything here reads files and
``sys.path`` only: it parses the target's source with ``ast`` and finds modules with
``importlib.machinery.PathFinder`` (which never executes a package's ``__init__``). When the
source cannot be read or parsed, or defines names dynamically, nothing is said here: the import
itself reports it, in the one wording ``resolve`` has.
"""

from __future__ import annotations

import ast
import difflib
import importlib.machinery
import importlib.util
import os
import re
import sys
import tokenize
from pathlib import Path

from gradscope._src.errors import TargetError

_ATTR = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_PYTEST = re.compile(rf"^(?P<path>.+\.py)::(?P<attr>{_ATTR})$")
_FILE = re.compile(rf"^(?P<path>.+\.py):(?P<attr>{_ATTR})$")
_MODULE = re.compile(rf"^(?P<module>{_ATTR}):(?P<attr>{_ATTR})$")


def looks_like_pytest_id(text: str) -> bool:
    """``file.py::fn``: a pytest node id where a target was meant."""
    return bool(_PYTEST.match(text))


def precheck(text: str) -> None:
    """Refuse a target string that cannot work, without importing it.

    Raises:
        TargetError: pytest's ``::``, no such file or module, or a file or module that
            defines no such function (with a hint: the closest name, or ``gradscope run``
            for a script that trains when run).
    """
    pytest_id = _PYTEST.match(text)
    if pytest_id:
        fixed = f"{pytest_id['path']}:{pytest_id['attr']}"
        raise TargetError(f"{text}: a target names its function after one colon: {fixed}")
    if text.endswith(":"):
        raise TargetError(f"{text}: name the function after the colon, as {text}build")
    if text.endswith(".py") and not _MODULE.match(text):
        _refuse_bare_file(text)
    match = _FILE.match(text)
    if match:
        path = Path(match["path"])
        if not path.is_file():
            raise TargetError(f"{text}: no such file: {match['path']}")
        _check_defines(text, path, match["attr"])
        return
    match = _MODULE.match(text)
    if match:
        origin = _find_module(match["module"])
        if origin is False:
            raise TargetError(
                f"{text}: no module named {match['module'].split('.')[0]!r} "
                "(looked in the current directory and on sys.path)"
            )
        if isinstance(origin, str) and origin.endswith(".py"):
            _check_defines(text, Path(origin), match["attr"])


def _refuse_bare_file(text: str) -> None:
    """``file.py`` with no function: say how to name one, or how to run the script."""
    path = Path(text)
    if not path.is_file():
        raise TargetError(f"{text}: no such file")
    tree = _parse(path)
    if tree is not None and _is_script(tree):
        raise TargetError(
            f"{text}: a script, not a target: gradscope run {text} runs it and watches its "
            f"gradients (a target names a function that builds a model, as {text}:build)"
        )
    raise TargetError(f"{text}: name the function that builds the target, as {text}:build")


def _find_module(name: str) -> str | bool | None:
    """The source file of module ``name`` found without running any module's code; ``False``
    when its top-level module is nowhere to be found, ``None`` when it cannot be told (an
    extension module, a namespace package, a module already imported)."""
    if name in sys.modules:
        return None
    parts = name.split(".")
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:  # a top-level name: every finder is asked, and no module's code runs
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError, OSError):
        return None
    finally:
        sys.path[:] = saved
    if spec is None:
        return False
    for depth in range(1, len(parts)):
        if spec.submodule_search_locations is None:
            return None  # a module, not a package: the import says what is wrong
        qualified = ".".join(parts[: depth + 1])
        try:  # PathFinder never executes the package's __init__
            found = importlib.machinery.PathFinder.find_spec(
                qualified, list(spec.submodule_search_locations)
            )
        except (ImportError, ValueError, OSError):
            return None
        if found is None:
            return None  # the package may make it at import: let the import say
        spec = found
    return spec.origin if spec.origin and spec.has_location else None


def _check_defines(text: str, path: Path, attr: str) -> None:
    tree = _parse(path)
    if tree is None:
        return
    names = _top_level_names(tree)
    if names is None:  # `from x import *` or a module __getattr__: any name may exist
        return
    head = attr.split(".")[0]
    if head in names:
        return
    functions = sorted(n for n in names if not n.startswith("_"))
    close = difflib.get_close_matches(head, functions, n=1)
    if close:
        hint = f"did you mean {close[0]!r}?"
    elif _is_script(tree):
        hint = f"it is a script: gradscope run {path} runs it and watches its gradients"
    else:
        hint = f"it defines {', '.join(functions) or 'none'}"
    raise TargetError(f"{text}: the module has no function {head!r} ({hint})")


def _parse(path: Path) -> ast.Module | None:
    try:
        with tokenize.open(path) as f:  # the encoding Python itself would use
            return ast.parse(f.read(), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None  # the import reports it, in Python's words


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """Every name the module's top level binds, or ``None`` when that cannot be known."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name == "__getattr__"
            and node in tree.body
        ):
            return None
        if isinstance(node, ast.Global):
            names.update(node.names)
    for node in _top_level_statements(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add((alias.asname or alias.name).split(".")[0])
        else:
            for target in _bound(node):
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _top_level_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run at import, through ``if``/``try``/``with``/loops (not functions)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list) and not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                out += _top_level_statements(inner)
        for handler in getattr(node, "handlers", []) or []:
            out += _top_level_statements(handler.body)
    return out


def _bound(node: ast.stmt) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    if isinstance(node, ast.Expr):  # walrus at the top level
        return [n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr)]
    return []


def _is_script(tree: ast.Module) -> bool:
    """A program meant to be run: an ``if __name__ == "__main__"`` block, or top-level calls
    that train (``fit``, ``train_on_batch``, ``GradientTape`` loops, ``Session.run``)."""
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
        if isinstance(node, (ast.Expr, ast.Assign, ast.For, ast.While, ast.With)):
            text = ast.unparse(node)
            if re.search(r"\.(fit|train_on_batch|run)\(|GradientTape\(", text):
                return True
    return False
