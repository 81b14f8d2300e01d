"""Every check format renders every kind of result; none is forgotten."""

from __future__ import annotations

import json

import pytest

from gradscope.report import CHECK_FORMATS, Format, render
from gradscope.results.check import CheckResult
from tests import checks

RESULTS = {
    "failing": lambda: checks.result(checks.every_kind()),
    "several": lambda: checks.result(checks.every_kind(), checks.clean()),
    "known": lambda: checks.result(checks.every_kind(), checks.clean(), known=2),
    "passing": lambda: checks.result(checks.clean()),
}


def test_check_formats_are_the_formats_that_draw_a_check() -> None:
    """Every format check offers draws a check result; every other one refuses it."""
    result = RESULTS["failing"]()
    drawn = set()
    for fmt in Format:
        try:
            render(result, fmt)
        except ValueError as refused:
            assert str(refused) == f"no {fmt.value} renderer for CheckResult"
        else:
            drawn.add(fmt)
    assert drawn == set(CHECK_FORMATS)


@pytest.mark.parametrize("fmt", list(CHECK_FORMATS))
@pytest.mark.parametrize("name", list(RESULTS))
def test_check_formats_render_every_member(fmt: Format, name: str) -> None:
    result: CheckResult = RESULTS[name]()
    text = render(result, fmt.value)
    assert text.endswith("\n") and not text.endswith("\n\n\n")
    assert "\x1b[" not in text
    for problem in result.problems:
        assert problem.variable in text
        assert problem.kind in text
    for report in result.reports:
        assert report.spec in text


@pytest.mark.parametrize("fmt", list(CHECK_FORMATS))
def test_check_formats_say_pass_or_fail(fmt: Format) -> None:
    failing = render(RESULTS["failing"](), fmt.value)
    passing = render(RESULTS["passing"](), fmt.value)
    assert failing != passing
    if fmt in (Format.TABLE, Format.GITHUB, Format.MARKDOWN):
        assert "failed: 4 problems in 1 spec" in failing
        assert "passed: 1 spec, 1 pairs, no unexpected gradients" in passing


def test_check_formats_table_colour_only_when_asked() -> None:
    result = RESULTS["several"]()
    assert "\x1b[" in render(result, "table", color=True)
    plain = render(result, "table")
    assert all(line == line.rstrip() for line in plain.splitlines())


def test_check_formats_table_lists_problems_with_lines_and_specs() -> None:
    text = render(RESULTS["known"](), "table", width=160)
    assert "configs/x.yaml:41" in text and "configs/x.yaml:11" in text
    assert "known  unexpected-none" in text or "known  unexpected-connected" in text
    assert "✓  configs/y.yaml" in text and "✗  configs/x.yaml" in text
    assert text.rstrip().endswith("(exit code 1)")


def test_check_formats_json_is_parseable_and_complete() -> None:
    data = json.loads(render(RESULTS["known"](), "json"))
    assert data["check"]["problems"] == 2 and data["check"]["known"] == 2
    assert len(data["reports"]) == 2


def test_check_formats_markdown_is_a_pull_request_comment() -> None:
    text = render(RESULTS["known"](), "markdown")
    assert text.startswith("### ❌ gradscope check failed")
    assert "- ❌ **never-trained** `configs/x.yaml:11`:" in text
    assert "- ☑️ **known** **unexpected-none** `configs/x.yaml:41`:" in text
    assert "<details open><summary><code>configs/x.yaml</code>" in text
    assert "<details><summary><code>configs/y.yaml</code>" in text
    assert "| ✅ | `configs/y.yaml` |" in text
