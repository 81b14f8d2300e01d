"""The pytest plugin's summary line counts as failed only the tests pytest counts as failed:
a test skipped after its gradient calls, and an xfailed one whose None gradient was the
expected failure, were counted among "failed" with their problems. The plugin's own hooks
are fed pytest's own reports; no TensorFlow."""

from __future__ import annotations

from typing import Any

import pytest

from gradscope._src.watch.pytest_plugin import FIELD, Watching


class _Config:
    def getoption(self, name: str) -> Any:
        return True  # --gradscope


def _report(name: str, outcome: str, problems: dict[str, int], **extra: Any) -> pytest.TestReport:
    report = pytest.TestReport(f"test_a.py::{name}", ("test_a.py", 1, name), {}, outcome,
                               None if outcome == "passed" else "why", "call", **extra)  # fmt: skip
    setattr(report, FIELD, {"calls": 1, "problems": problems})
    return report


def test_summary_counts_only_failed_tests_among_failed() -> None:
    watching = Watching(_Config())  # type: ignore[arg-type]
    for report in (
        _report("test_none", "failed", {"unexpected-none": 1}),
        _report("test_skipped", "skipped", {"unexpected-none": 2}),
        _report("test_xfailed", "skipped", {"nan": 1}, wasxfail=""),
        _report("test_clean", "passed", {}),
        _report("test_failed_otherwise", "failed", {}),  # an assert, no gradient problem
    ):
        watching.pytest_runtest_logreport(report)
    assert watching.failed == ["test_a.py::test_none"]
    assert watching.summary() == (
        "gradscope: 5 tests watched, 5 gradient calls; 1 failed: 1 unexpected-none"
    )


def test_summary_of_skipped_and_xfailed_problems_alone_is_no_failure() -> None:
    watching = Watching(_Config())  # type: ignore[arg-type]
    watching.pytest_runtest_logreport(_report("test_skipped", "skipped", {"unexpected-none": 1}))
    watching.pytest_runtest_logreport(_report("test_x", "skipped", {"nan": 1}, wasxfail=""))
    assert watching.summary() == (
        "gradscope: 2 tests watched, 2 gradient calls; no unexpected None or NaN gradient"
    )
