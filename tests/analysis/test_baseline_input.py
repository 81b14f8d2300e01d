"""A hostile --baseline file is one UsageError naming it: never a hang, a crash or exit 3."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradscope._src.analysis.baseline import load_baseline
from gradscope._src.errors import UsageError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "not a gradscope report: nested too deeply"),
        ('{"gradscope": ' + "9" * 5000 + "}", "not a gradscope report: Exceeds the limit"),
    ],
    ids=["nested-100k-deep", "int-of-5000-digits"],
)
def test_a_hostile_baseline_is_a_usage_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        load_baseline(str(path))


def test_a_fifo_or_device_baseline_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "baseline.json"
    os.mkfifo(fifo)
    for path in (str(fifo), "/dev/zero"):
        with pytest.raises(UsageError, match="cannot read it: not a regular file"):
            load_baseline(path)
