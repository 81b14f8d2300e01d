"""Every note in every format (issue 15, class 10): a traced-vs-eager disagreement (a
while_loop whose every path is stopped: traced zeros, eager None) reaches each output."""

from __future__ import annotations

from typing import Any

import pytest

import gradscope
from gradscope.report import CheckFormat, DiffFormat, Format, render
from tests.frontends.python.bare import DATA

pytestmark = pytest.mark.tf

TARGET = f"{DATA / 'truth' / 'bodies.py'}:while_loop"
NOTE = "traced and eager gradients disagree"


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    report = gradscope.inspect(TARGET)
    assert any(NOTE in n for loss in report.losses for n in loss.notes)
    return {
        "inspect": report,
        "check": gradscope.check(TARGET),
        "diff": gradscope.diff(TARGET, "all_stopped", "partly"),
    }


@pytest.mark.parametrize("fmt", [f.value for f in Format])
def test_notes_in_every_inspect_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["inspect"], fmt, width=400).split())


@pytest.mark.parametrize("fmt", [f.value for f in CheckFormat])
def test_notes_in_every_check_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["check"], fmt, width=400).split())


@pytest.mark.parametrize("fmt", [f.value for f in DiffFormat])
def test_notes_in_every_diff_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["diff"], fmt, width=400).split())
