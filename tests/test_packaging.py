"""The distribution: its own name on the package index; the import and the command stay."""

from __future__ import annotations

import importlib.metadata
import warnings
from pathlib import Path

import pytest

from tests.conftest import ROOT

#: ``gradscope`` on the package index is an unrelated project (with its own ``gradscope``
#: command): installing it by that name would install someone else's code.
DISTRIBUTION = "gradscope-tf"


@pytest.fixture(scope="module")
def metadata(tmp_path_factory: pytest.TempPathFactory) -> importlib.metadata.Distribution:
    """The metadata ``pip install`` would record, built from this tree's pyproject.toml."""
    from setuptools import build_meta

    out = tmp_path_factory.mktemp("metadata")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        patch.chdir(ROOT)
        name = build_meta.prepare_metadata_for_build_wheel(str(out))
    return importlib.metadata.PathDistribution(Path(out) / name)


def test_distribution_name_is_not_the_unrelated_gradscope(
    metadata: importlib.metadata.Distribution,
) -> None:
    assert metadata.metadata["Name"] == DISTRIBUTION


def test_distribution_keeps_import_name_and_command(
    metadata: importlib.metadata.Distribution,
) -> None:
    scripts = {e.name: e.value for e in metadata.entry_points if e.group == "console_scripts"}
    assert scripts == {"gradscope": "gradscope._src.cli:main"}
    assert (metadata.read_text("top_level.txt") or "").split() == ["gradscope"]


def test_readme_installs_from_the_source_not_an_index() -> None:
    """Nothing is published: the README installs from a copy of the source, and never names
    `gradscope` on an index (an unrelated project) or the unpublished distribution."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install .\n" in readme
    assert f"pip install {DISTRIBUTION}" not in readme
    assert "pip install gradscope " not in readme and "pip install gradscope\n" not in readme
