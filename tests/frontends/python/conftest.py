"""Fixtures for Python targets: the sample package and loose file under ``data/``."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.frontends.python.bare import DATA


@pytest.fixture
def in_data(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run from ``tests/frontends/python/data``, as a user runs gradscope next to their code."""
    monkeypatch.chdir(DATA)
    yield


@pytest.fixture
def mypkg(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """``mypkg.models``, imported as the user's own code would import it."""
    monkeypatch.syspath_prepend(str(DATA))
    import importlib

    return importlib.import_module("mypkg.models")


@pytest.fixture
def loose() -> ModuleType:
    """``data/loose_model.py``, loaded as its own module."""
    from tests.frontends.python.bare import load_file

    return load_file(DATA / "loose_model.py")
