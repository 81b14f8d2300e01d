"""Whatever a small spec asks of TensorFlow, ``gradscope inspect`` ends in exit 0 or 2.

Specs built from random ops (gradscope's usual ones, Keras layers, and any op a spec may
name), random attrs and random shapes pass the validator often and then fail inside
TensorFlow in every way it can: at trace time (shapes, dtypes, bad attrs, Keras layers) and
at run time (indices out of range, singular matrices). TensorFlow is imported once; each
example runs ``inspect`` in-process. Every failure must be exit 2 with lines
``FILE:LINE:COLUMN: ...``: never exit 3 (a TensorFlow error mistaken for gradscope's own),
never a traceback, never over the deadline. ``--max-elements`` is kept small so that no
example can allocate much.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given

from gradscope._src.cli import main
from tests.fuzz import strategies as fs
from tests.fuzz.profile import fuzz_settings

pytestmark = pytest.mark.tf

MAX_ELEMENTS = "100000"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gradscope._src.engine.tf_import as tf_import

    tf_import.import_tensorflow()  # once, before the first example's deadline starts
    folder = tmp_path_factory.mktemp("fuzz-tf")
    os.mkfifo(folder / "reads.fifo")  # a canary: an op opening it to read would block
    return folder


@fuzz_settings(examples=200, seconds=30)
@given(fs.tf_specs())
def test_fuzz_inspect_small_specs_end_in_a_report_or_a_located_error(
    folder: Path, spec: dict[str, Any]
) -> None:
    path = folder / "fuzz.yaml"
    path.write_bytes(fs.dump(spec))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # relative file names in attrs (MARKER, reads.fifo) land here
        result = CliRunner().invoke(
            main, ["inspect", str(path), "-q", "--max-elements", MAX_ELEMENTS]
        )
    assert sorted(p.name for p in folder.iterdir()) == ["fuzz.yaml", "reads.fifo"]
    assert result.exit_code in (0, 2), (result.exit_code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output
    if result.exit_code == 0:
        assert "pairs:" in result.stdout or "pair:" in result.stdout
        return
    pattern = re.compile(rf"^{re.escape(str(path))}:\d+:\d+: \S")
    lines = result.stderr.splitlines()
    assert lines, result.output
    for line in lines:
        assert pattern.match(line), line
        for noise in ("{{node", "{{function_node", "[Op:", "Graph execution error"):
            assert noise not in line, line
