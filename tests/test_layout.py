"""The package's shape holds: data flows one way (import-linter's contracts in pyproject.toml,
no import cycle) and no folder that tools misread (pytest skips ``build``, so tests there never
ran). There is no line cap (issue 29)."""

from __future__ import annotations

import fnmatch
import os
import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gradscope"

#: pytest's default ``norecursedirs``: a test file below one of these is never collected.
NORECURSE = ["*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}"]


def test_layout_keeps_its_import_contracts() -> None:
    """The layers, the TensorFlow-free rendering and analysis, and no cycle between sibling
    packages or modules: pyproject.toml's import-linter contracts (imports inside functions
    count)."""
    lint = Path(sys.executable).with_name("lint-imports")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    # subprocess.run kills the child when the timeout expires
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_layout_no_package_face_imports_back_what_imports_it() -> None:
    """Importing ``gradscope._src.report.table`` runs ``gradscope/_src/report/__init__.py``
    first, so a face and a module below it that import each other (directly or through others)
    are a cycle; import-linter's contracts look at siblings, so this asks its graph (grimp)."""
    graph = grimp.build_graph("gradscope")
    faces = sorted(m for m in graph.modules if graph.find_children(m))
    both_ways = [
        (face, below)
        for face in faces
        for below in sorted(graph.find_descendants(face))
        if graph.chain_exists(face, below) and graph.chain_exists(below, face)
    ]
    assert both_ways == []


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
