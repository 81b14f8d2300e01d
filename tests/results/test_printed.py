"""A result printed from Python is its table: ``print(report)`` and the plain REPL (``repr``)
show what ``gradscope inspect`` prints, never a dump of the dataclass' fields; a finding
prints as one ``FILE:LINE: kind: message`` line; a Monitor's fit ends with one line naming
what it found. Hand-made facts, no TensorFlow."""

from __future__ import annotations

from typing import Any

import pytest

from gradscope._src.report import render
from gradscope._src.timeline.findings import ended_line
from tests.report import samples


def _results() -> list[Any]:
    return [samples.inspect_report(), samples.run_report(), samples.diff(),
            samples.diff_matrix(), samples.CHECKS["failing"]()]  # fmt: skip


@pytest.mark.parametrize("width", [80, 200])
def test_print_and_repr_are_the_table(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    for result in _results():
        table = render(result, "table", width=width)
        assert str(result) == table and repr(result) == table
        assert f"{type(result).__name__}(" not in str(result)  # no dataclass dump
    report = samples.inspect_report()
    assert "body/w" in str(report) and "stopped" in str(report)


def test_a_finding_prints_as_its_line() -> None:
    (problem,) = samples.inspect_report().problems
    assert str(problem) == (
        "configs/x.yaml:9: never-trained: `spare` is trainable but no loss gives it a gradient"
    )


def _found(n: int) -> list[dict[str, Any]]:
    return [{"kind": "dead", "site": "train.py:40", "variable": f"d{i}/kernel", "from_step": 10 * i,
             "message": "..."} for i in range(1, n + 1)]  # fmt: skip


def test_an_ended_fit_names_what_it_found_in_one_line() -> None:
    assert ended_line("train.py:40", _found(1)) == (
        "gradscope: fit() at train.py:40 found 1 problem: d1/kernel dead from step 10 "
        "(monitor.findings has each message and fix)"
    )
    five = ended_line("train.py:40", _found(5))
    assert "\n" not in five and "found 5 problems: " in five
    assert "d3/kernel dead from step 30 and 2 more (" in five and "d4/kernel" not in five
    assert ended_line("fit", _found(1)).startswith("gradscope: fit() found 1 problem")
