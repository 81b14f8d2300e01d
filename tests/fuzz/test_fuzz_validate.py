"""Whatever a spec file holds, ``gradscope validate`` ends in exit 0 or 2, never a crash.

Random bytes, random YAML, and valid specs mutated at every field go through the command
line in-process (click's runner, the same code path as the installed command). On exit 2
every line of standard error is ``FILE:LINE:COLUMN: message``; there is never a traceback,
an internal error (exit 3), or a hang (each example has a deadline).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from gradscope._src.cli import main
from tests.fuzz import strategies as fs
from tests.fuzz.profile import fuzz_settings


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check_validate(folder: Path, data: bytes) -> None:
    """Validate ``data`` as a spec file; assert the outcome is one of the two allowed."""
    path = folder / "fuzz.yaml"
    path.write_bytes(data)
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
    if result.exit_code == 0:
        assert result.stdout.startswith(f"ok  {path} (")
        return
    pattern = re.compile(rf"^{re.escape(str(path))}:\d+:\d+: \S")
    lines = result.stderr.splitlines()
    assert lines, result.output
    for line in lines:
        assert pattern.match(line), line


@fuzz_settings(examples=400, seconds=5)
@given(st.binary(max_size=400))
def test_fuzz_validate_random_bytes(folder: Path, data: bytes) -> None:
    check_validate(folder, data)


@fuzz_settings(examples=300, seconds=5)
@given(fs.yaml_text)
def test_fuzz_validate_random_yaml_syntax(folder: Path, text: str) -> None:
    check_validate(folder, text.encode("utf-8"))


@fuzz_settings(examples=250, seconds=5)
@given(fs.documents)
def test_fuzz_validate_random_documents(folder: Path, document: Any) -> None:
    check_validate(folder, fs.dump(document))
    wrapped = {"gradscope": 1, "losses": {"l": "s"}, "nodes": document}
    check_validate(folder, fs.dump(wrapped))


@fuzz_settings(examples=60, seconds=5)
@given(fs.deep_text())
def test_fuzz_validate_deep_nesting(folder: Path, text: str) -> None:
    check_validate(folder, text.encode("utf-8"))


@fuzz_settings(examples=700, seconds=5)
@given(fs.mutated_specs())
def test_fuzz_validate_mutated_specs(folder: Path, document: Any) -> None:
    check_validate(folder, fs.dump(document))
