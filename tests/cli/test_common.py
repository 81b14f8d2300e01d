"""What every command shares: the plain progress lines of a CI log."""

from __future__ import annotations

import time

import pytest

from gradscope._src.cli.common import plain_progress


def test_plain_progress_names_a_long_phase_and_keeps_a_short_run_silent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with plain_progress(after=0.2, every=0.3) as update:
        update("building the model")  # short: no line
        update("tracing the model")
        time.sleep(0.65)  # long: a line after 0.2 s, another 0.3 s later
    time.sleep(0.4)  # nothing after the run ended
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2, lines
    assert all(
        line.startswith("gradscope: tracing the model (still running after ") for line in lines
    )


def test_plain_progress_prints_nothing_for_a_quick_run(capsys: pytest.CaptureFixture[str]) -> None:
    with plain_progress(after=0.5) as update:
        for phase in ("importing TensorFlow", "building the model", "tracing the model"):
            update(phase)
    time.sleep(0.6)
    assert capsys.readouterr().err == ""
