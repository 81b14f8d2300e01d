"""Shared test helpers: repository paths, spec files in tmp dirs, and the CLI as users run it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., str]:
    """Write dedented YAML text to a file in a temporary directory and return its path."""

    def write(text: str, name: str = "spec.yaml") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def no_tensorflow(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import tensorflow`` (and keras) fails loudly."""
    blocker = tmp_path / "blocked-modules"
    for name in ("tensorflow", "keras"):
        package = blocker / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ImportError('{name} must not be imported here')\n", encoding="utf-8"
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def run_cli() -> RunCli:
    """Run ``python -m gradscope ARGS...`` in a subprocess, as a user would."""

    def run(
        *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "gradscope", *args],
            cwd=cwd or ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    return run


#: Logical CPU devices a ``replicas`` test may use (``--strategy mirrored --replicas 2``).
REPLICAS = 2


def pytest_collection_finish(session: pytest.Session) -> None:
    """Make the logical CPU devices ``replicas`` tests run on before any test runs.

    TensorFlow fixes its devices when it first initialises them, so this happens once, after
    collection and before the first test touches TensorFlow; sessions without such a test
    never import TensorFlow here.
    """
    if any(item.get_closest_marker("replicas") for item in session.items):
        from gradscope.engine.distribute.devices import configure
        from gradscope.engine.tf_import import import_tensorflow

        configure(import_tensorflow(), REPLICAS)
