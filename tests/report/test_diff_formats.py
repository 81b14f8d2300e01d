"""Every format renders a diff and the matrix of every pair; none is forgotten."""

from __future__ import annotations

import pytest

from gradscope._src.analysis.diff import matrix
from gradscope._src.report import DIFF_FORMATS, Format, render
from gradscope._src.results import report as m
from tests.report import samples


@pytest.mark.parametrize("fmt", list(DIFF_FORMATS))
@pytest.mark.parametrize("make", [samples.diff, samples.diff_matrix], ids=["diff", "matrix"])
def test_diff_format_renders_every_member(fmt: Format, make: object) -> None:
    result = make()  # type: ignore[operator]
    text = render(result, fmt.value)
    assert text.endswith("\n")
    assert "embedding" in text or "head1" in text


def test_diff_format_matrix_table_and_markdown_call_out_conflicting_pairs() -> None:
    table = render(samples.diff_matrix(), "table")
    row = next(line for line in table.splitlines() if line.startswith("head2"))
    assert row.split() == ["head2", "-0.750", "+1.000", "-"]
    assert "head1 × head2" in table and "embedding (-0.750)" in table
    assert table.splitlines()[-1] == "3 losses, 3 pairs: 1 in conflict, 2 with no cosine"
    markdown = render(samples.diff_matrix(), "markdown")
    assert "| `head2` | **-0.750** | +1.000 | - |" in markdown
    assert "- `head1` × `head2`: cosine -0.750 over 1 shared variable" in markdown


def test_diff_format_matrix_of_one_loss_says_there_is_nothing_to_compare() -> None:
    result = matrix(samples.diff_base({"only": [("embedding", m.OK, 1.0)]}), [])
    assert "only one loss: nothing to compare" in render(result, "table")
    assert "Only one loss: nothing to compare." in render(result, "markdown")


@pytest.mark.parametrize("make", [samples.diff, samples.diff_matrix], ids=["diff", "matrix"])
def test_diff_results_print_with_rich_as_in_a_notebook(make: object) -> None:
    from rich.console import Console

    console = Console(record=True, width=120, color_system=None)
    console.print(make())  # type: ignore[operator]
    assert "gradscope diff" in console.export_text()
