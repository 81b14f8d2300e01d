"""Every note in every format (issue 15, class 10): a traced-vs-eager disagreement (a
while_loop whose every path is stopped: traced zeros, eager None) reaches each output."""

from __future__ import annotations

from typing import Any

import pytest

import gradscope
from gradscope._src.report import CHECK_FORMATS, DIFF_FORMATS, INSPECT_FORMATS, Format, render
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


@pytest.mark.parametrize("fmt", [f.value for f in INSPECT_FORMATS])
def test_notes_in_every_inspect_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["inspect"], fmt, width=400).split())


@pytest.mark.parametrize("fmt", [f.value for f in CHECK_FORMATS])
def test_notes_in_every_check_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["check"], fmt, width=400).split())


@pytest.mark.parametrize("fmt", [f.value for f in DIFF_FORMATS])
def test_notes_in_every_diff_format(results: dict[str, Any], fmt: str) -> None:
    assert NOTE in " ".join(render(results["diff"], fmt, width=400).split())


def test_a_note_after_a_loss_too_wide_for_it_stays_whole_at_80_columns(
    results: dict[str, Any],
) -> None:
    """A loss named by an absolute path (a `gradscope run` site) leaves a note no room beside
    it: the note goes below, in lines of words, never one character per line."""
    from dataclasses import replace

    report = results["inspect"]
    wide = "/tmp/" + "a-long-directory/" * 4 + "train.py:14"  # 78 characters
    losses = tuple(replace(loss, name=wide) if NOTE in " ".join(loss.notes) else loss
                   for loss in report.losses)  # fmt: skip
    text = render(replace(report, losses=losses), Format.TABLE.value, width=80)
    notes = text[text.index("Notes") :]
    assert NOTE in " ".join(notes.split())
    assert all(len(line.strip()) > 1 for line in notes.splitlines() if line.strip())
    assert max(len(line) for line in text.splitlines()) <= 80
