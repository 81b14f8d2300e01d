"""Every format renders a diff and the matrix of every pair; none is forgotten."""

from __future__ import annotations

import json

import pytest

from gradscope.analysis.diff import compare, matrix
from gradscope.report import DIFF_FORMATS, Format, render
from gradscope.results import report as m
from gradscope.results.diff import DiffMatrix, DiffReport
from gradscope.results.facts import Comparison, CutPoint, VariableFacts

STOP = CutPoint("head1_frozen", "StopGradient", "stopped", "configs/x.yaml:31")


def _cuts(status: str) -> tuple[CutPoint, ...]:
    return (STOP,) if status == m.STOPPED else ()


def _report(losses: dict[str, list[tuple[str, str, float | None]]]) -> m.Report:
    names = [v for v, _, _ in next(iter(losses.values()))]
    variables = tuple(VariableFacts(n, (3, 4), "float32", True, "configs/x.yaml:9") for n in names)
    results = []
    for loss, rows in losses.items():
        sparse = loss != "loss2"  # embedding: IndexedSlices under every loss but loss2
        pairs = tuple(
            m.PairResult(v, s, n, (3, 4), v == "embedding" and sparse, _cuts(s)) for v, s, n in rows
        )
        results.append(m.LossResult(loss, 2.5, pairs))
    return m.Report("configs/x.yaml", "x", "2.21.0", "CPU:0", variables, tuple(results))


def _diff() -> DiffReport:
    report = _report(
        {
            "loss1": [("embedding", m.OK, 1.0), ("output1", m.OK, 2.0), ("output2", m.DISCONNECTED,
                      None)],
            "loss2": [("embedding", m.OK, 2.0), ("output1", m.STOPPED, None), ("output2", m.OK,
                      1.0)],
        }
    )  # fmt: skip
    one = {"embedding": 1.0}
    cmp = Comparison(
        "loss1", "loss2", {"embedding": -1.5}, {"embedding": 0.25}, one, {"embedding": 4.0}
    )
    return DiffReport(report, compare(report, cmp))


def _matrix() -> DiffMatrix:
    report = _report(
        {
            "head1": [("embedding", m.OK, 1.0)],
            "head2": [("embedding", m.OK, 1.0)],
            "head3": [("embedding", m.DISCONNECTED, None)],
        }
    )
    one = {"embedding": 1.0}
    return matrix(report, [Comparison("head1", "head2", {"embedding": -0.75}, one, one, one),
                           Comparison("head1", "head3"), Comparison("head2", "head3")])  # fmt: skip


@pytest.mark.parametrize("fmt", list(DIFF_FORMATS))
@pytest.mark.parametrize("make", [_diff, _matrix], ids=["diff", "matrix"])
def test_diff_format_renders_every_member(fmt: Format, make: object) -> None:
    result = make()  # type: ignore[operator]
    text = render(result, fmt.value)
    assert text.endswith("\n")
    assert "embedding" in text or "head1" in text


@pytest.mark.parametrize("make", [_diff, _matrix], ids=["diff", "matrix"])
def test_diff_format_table_has_colour_only_when_asked(make: object) -> None:
    result = make()  # type: ignore[operator]
    assert "\x1b[" not in render(result, "table")
    assert "\x1b[" in render(result, "table", color=True)


def test_diff_format_table_shows_numbers_reach_and_conflicts() -> None:
    text = render(_diff(), "table")
    lines = text.splitlines()
    row = next(line for line in lines if line.startswith("embedding"))
    assert row.split()[-3:] == ["-0.750", "25.0%", "0.5"]
    assert "ok 1.00e+00 (sparse)" in row
    wide = render(_diff(), "table", width=200)
    assert (
        " only loss1  output1   loss2 reaches output1 only through head1_frozen (StopGradient), "
        "so loss2 never trains it  configs/x.yaml:31" in wide
    )
    assert "Pulling against each other" in text
    assert "whole model: cosine -0.750 over 1 shared variable" in text
    assert lines[-1].startswith("3 variables: 1 shared, 1 only loss1, 1 only loss2, 0 neither")


def test_diff_format_json_has_cosine_per_shared_variable() -> None:
    data = json.loads(render(_diff(), "json"))
    assert data["gradscope"] == 1
    assert set(data["losses"]) == {"loss1", "loss2"}  # the inspect report of both losses
    diff = data["diff"]
    assert diff["variables"]["embedding"]["cosine"] == -0.75
    assert diff["variables"]["embedding"]["sign_agreement"] == 0.25
    assert diff["variables"]["embedding"]["norm_ratio"] == 0.5
    assert diff["variables"]["output1"]["cosine"] is None
    assert diff["reach"] == {"both": ["embedding"], "only_a": ["output1"],
                             "only_b": ["output2"], "neither": []}  # fmt: skip
    assert diff["cosine"] == -0.75


def test_diff_format_markdown_is_a_table_for_pull_requests() -> None:
    text = render(_diff(), "markdown")
    assert (
        "| variable | shape | A: `loss1` | B: `loss2` | cosine | signs agree | norm A/B |" in text
    )
    assert (
        "| `embedding` | [3,4] | ✅ ok 1.00e+00 (sparse) | ✅ ok 2.00e+00 | -0.750 | 25.0% | 0.5 |"
        in text
    )
    assert "- `output1`, only `loss1`: loss2 reaches output1 only through head1_frozen" in text
    assert "(at `configs/x.yaml:31`)" in text
    assert "**whole model: cosine -0.750 over 1 shared variable**" in text


def test_diff_format_matrix_table_and_markdown_call_out_conflicting_pairs() -> None:
    table = render(_matrix(), "table")
    row = next(line for line in table.splitlines() if line.startswith("head2"))
    assert row.split() == ["head2", "-0.750", "+1.000", "-"]
    assert "head1 × head2" in table and "embedding (-0.750)" in table
    assert table.splitlines()[-1] == "3 losses, 3 pairs: 1 in conflict, 2 with no cosine"
    markdown = render(_matrix(), "markdown")
    assert "| `head2` | **-0.750** | +1.000 | - |" in markdown
    assert "- `head1` × `head2`: cosine -0.750 over 1 shared variable" in markdown


def test_diff_format_matrix_json() -> None:
    data = json.loads(render(_matrix(), "json"))
    assert data["matrix"]["head1"] == {"head1": 1.0, "head2": -0.75, "head3": None}
    assert data["conflicts"] == [{"loss_a": "head1", "loss_b": "head2", "cosine": -0.75}]
    assert len(data["pairs"]) == 3


def test_diff_format_matrix_of_one_loss_says_there_is_nothing_to_compare() -> None:
    result = matrix(_report({"only": [("embedding", m.OK, 1.0)]}), [])
    assert "only one loss: nothing to compare" in render(result, "table")
    assert "Only one loss: nothing to compare." in render(result, "markdown")


@pytest.mark.parametrize("make", [_diff, _matrix], ids=["diff", "matrix"])
def test_diff_results_print_with_rich_as_in_a_notebook(make: object) -> None:
    from rich.console import Console

    console = Console(record=True, width=120, color_system=None)
    console.print(make())  # type: ignore[operator]
    assert "gradscope diff" in console.export_text()


@pytest.mark.parametrize("width", [80, 120])
def test_diff_format_table_never_cuts_a_long_variable_name(width: int) -> None:
    long = "encoder/block_00/attention/query/kernel_with_a_long_name"
    report = _report(
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
