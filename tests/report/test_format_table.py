"""The table format (``report/table.py``): inspect, check, diff and run as a terminal reads them."""

from __future__ import annotations

import pytest

from gradscope._src.analysis.diff import compare
from gradscope._src.report import Format, render
from gradscope._src.results import report as m
from gradscope._src.results.diff import DiffReport
from gradscope._src.results.facts import Comparison
from tests.report import samples


def test_format_table_has_colour_only_when_asked() -> None:
    assert "\x1b[" not in render(samples.inspect_report(), "table")
    assert "\x1b[" in render(samples.inspect_report(), "table", color=True)


def test_format_table_names_the_cut_point_and_line() -> None:
    text = render(samples.inspect_report(), "table")
    assert "frozen (StopGradient) at configs/x.yaml:17" in text
    assert "never-trained" in text


def test_check_formats_table_colour_only_when_asked() -> None:
    result = samples.CHECKS["several"]()
    assert "\x1b[" in render(result, "table", color=True)
    plain = render(result, "table")
    assert all(line == line.rstrip() for line in plain.splitlines())


def test_check_formats_table_lists_problems_with_lines_and_specs() -> None:
    text = render(samples.CHECKS["known"](), "table", width=160)
    assert "configs/x.yaml:41" in text and "configs/x.yaml:11" in text
    assert "known  unexpected-none" in text or "known  unexpected-connected" in text
    assert "✓  configs/y.yaml" in text and "✗  configs/x.yaml" in text
    assert text.rstrip().endswith("(exit code 1)")


@pytest.mark.parametrize("make", [samples.diff, samples.diff_matrix], ids=["diff", "matrix"])
def test_diff_format_table_has_colour_only_when_asked(make: object) -> None:
    result = make()  # type: ignore[operator]
    assert "\x1b[" not in render(result, "table")
    assert "\x1b[" in render(result, "table", color=True)


def test_diff_format_table_shows_numbers_reach_and_conflicts() -> None:
    text = render(samples.diff(), "table")
    lines = text.splitlines()
    row = next(line for line in lines if line.startswith("embedding"))
    assert row.split()[-3:] == ["-0.750", "25.0%", "0.5"]
    assert "ok 1.00e+00 (sparse)" in row
    wide = render(samples.diff(), "table", width=200)
    assert (
        " only loss1  output1   loss2 reaches output1 only through head1_frozen (StopGradient), "
        "so loss2 never trains it  configs/x.yaml:31" in wide
    )
    assert "Pulling against each other" in text
    assert "whole model: cosine -0.750 over 1 shared variable" in text
    assert lines[-1].startswith("3 variables: 1 shared, 1 only loss1, 1 only loss2, 0 neither")


@pytest.mark.parametrize("width", [80, 120])
def test_diff_format_table_never_cuts_a_long_variable_name(width: int) -> None:
    long = "encoder/block_00/attention/query/kernel_with_a_long_name"
    report = samples.diff_base(
        {
            "loss1": [(long, m.OK, 1.0), ("output2", m.DISCONNECTED, None)],
            "loss2": [(long, m.OK, 2.0), ("output2", m.OK, 1.0)],
        }
    )
    cmp = Comparison("loss1", "loss2", {long: -1.5}, {long: 0.25}, {long: 1.0}, {long: 4.0})
    text = render(DiffReport(report, compare(report, cmp)), "table", width=width)
    assert f"{long}  [3,4]" in text or any(
        line.startswith(f"{long} ") for line in text.splitlines()
    )
    assert "…" not in text
    assert all(line == line.rstrip() for line in text.splitlines())
    if width == 80:  # too wide side by side: the name on its own line, labelled cells below
        at = text.splitlines().index(f"{long}  [3,4]")
        assert text.splitlines()[at + 1].startswith("  A: ok 1.00e+00  B: ok 2.00e+00  cosine")


def test_run_table_fits_80_columns_and_names_the_cut() -> None:
    text = render(samples.run_report(), Format.TABLE, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())  # rich wraps long lines at 80 columns
    assert "train.py:12 · GradientTape.gradient (eager) · step 1" in flat
    assert "loss scale 3.28e+04 (norms unscaled)" in flat
    assert "ResourceStridedSliceAssign" in flat
    assert (
        "stopped by --stop at step 2 of train.py:12 (--steps 1): the rest of the program "
        "did not run, so nothing in it was watched · call sites seen: train.py:12, model.py:40"
    ) in flat
