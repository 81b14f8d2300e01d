"""The package's shape holds: data flows one way (no import cycle) and no folder that tools
misread (pytest skips ``build``, so tests there never ran). There is no line cap (issue 29)."""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gradscope"

#: pytest's default ``norecursedirs``: a test file below one of these is never collected.
NORECURSE = ["*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}"]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules ``name`` imports anywhere in its body (function-level imports too), leaving
    out package faces (``__init__``): a face re-exporting is not its importer's dependency."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    faces = {m for m, p in modules.items() if p.name == "__init__.py"}
    return {m for m in found if m in modules and m not in faces and m != name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_layout_has_no_import_cycle() -> None:
    modules = _modules()
    graph = {
        name: _imports(name, path, modules)
        for name, path in modules.items()
        if path.name != "__init__.py"
    }
    assert _cycles(graph) == []


def test_layout_has_no_folder_tools_misread() -> None:
    folders = [p for d in (PACKAGE, ROOT / "tests") for p in d.rglob("*") if p.is_dir()]
    assert [p for p in folders if p.name in ("build", "spec", "specs", "dist")] == []


def test_layout_every_test_file_is_collected() -> None:
    """No test file sits below a folder pytest does not recurse into."""
    skipped = [
        path
        for path in (ROOT / "tests").rglob("test_*.py")
        for part in path.relative_to(ROOT).parts[:-1]
        if any(fnmatch.fnmatch(part, pattern) for pattern in NORECURSE)
    ]
    assert skipped == []
