"""Every check format renders every kind of result; none is forgotten."""

from __future__ import annotations

import pytest

from gradscope._src.report import CHECK_FORMATS, Format, render
from gradscope._src.results.check import CheckResult
from tests.report import samples


def test_check_formats_are_the_formats_that_draw_a_check() -> None:
    """Every format check offers draws a check result; every other one refuses it."""
    result = samples.CHECKS["failing"]()
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
@pytest.mark.parametrize("name", list(samples.CHECKS))
def test_check_formats_render_every_member(fmt: Format, name: str) -> None:
    result: CheckResult = samples.CHECKS[name]()
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
    failing = render(samples.CHECKS["failing"](), fmt.value)
    passing = render(samples.CHECKS["passing"](), fmt.value)
    assert failing != passing
    if fmt in (Format.TABLE, Format.GITHUB, Format.MARKDOWN):
        assert "failed: 4 problems in 1 spec" in failing
        assert "passed: 1 spec, 1 pairs, no unexpected gradients" in passing
