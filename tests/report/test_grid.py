"""The terminal table at 80 and 120 columns: names whole, no trailing blanks, red for problems."""

from __future__ import annotations

import dataclasses
import re

import pytest

from gradscope._src.report import render, style
from gradscope._src.report.rows import matrix_rows
from gradscope._src.results import report as m
from gradscope._src.results.facts import CutPoint
from tests import checks

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PARTS = ("attention/query/kernel", "attention/key/kernel", "mlp/dense_out/kernel", "norm/gamma")


def big(variables: int = 200, losses: int = 7, stopped_every: int = 0) -> m.Report:
    """``variables`` long-named variables over ``losses`` losses; every ``stopped_every``-th
    variable is stopped (at one line of a loop) under the second loss."""
    names = [f"encoder/block_{i // 4:02d}/{PARTS[i % 4]}" for i in range(variables)]
    facts = [checks.variable(n, 10 + i) for i, n in enumerate(names)]
    results = []
    for k in range(losses):
        pairs = []
        for i, n in enumerate(names):
            if k == 1 and stopped_every and i % stopped_every == 0:
                cut = CutPoint(f"StopGradient_{i}", "StopGradient", "stopped", "model.py:16")
                pairs.append(checks.pair(n, m.STOPPED, cuts=[cut]))
            else:
                pairs.append(checks.pair(n, m.OK, 0.5 + k))
        results.append(m.LossResult(f"loss_number_{k}", 1.0 + k, tuple(pairs), f"s.yaml:{k}"))
    return checks.report(results, facts)


@pytest.mark.parametrize("width", [80, 120])
def test_table_never_cuts_a_variable_name(width: int) -> None:
    report = big()
    text = render(report, "table", width=width, group="none")
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), max(lines, key=len)
    for v in report.variables:  # each name whole, at the start of its rows
        assert sum(line.startswith(v.name + " ") for line in lines) >= 1, v.name
    assert "…" not in text


@pytest.mark.parametrize("width", [80, 120])
def test_table_splits_losses_into_groups_that_fit(width: int) -> None:
    report = big(variables=8)
    lines = render(report, "table", width=width, group="none").splitlines()
    headings = [line for line in lines if re.fullmatch(r"loss(es)? \d+(-\d+)? of 7", line)]
    assert len(headings) >= 2  # 7 losses with 40-character names never fit in one block
    for loss in report.losses:  # every loss in exactly one block
        assert sum(loss.name in line.split() for line in lines) == 1, loss.name
    rows = [line for line in lines if line.startswith("encoder/block_00/attention/query/kernel")]
    assert len(rows) == len(headings)  # the variable column is repeated in every block


def test_table_at_120_keeps_seven_short_losses_in_one_block() -> None:
    report = checks.every_kind()
    lines = render(report, "table", width=120).splitlines()
    assert not any(line.startswith("losses ") for line in lines)


def test_table_gives_a_name_longer_than_the_terminal_a_line_of_its_own() -> None:
    name = "a/" + "very_long_scope/" * 6 + "kernel"  # 104 characters
    report = checks.report(
        [m.LossResult("loss", 1.0, (checks.pair(name, m.OK, 1.0),), "s.yaml:3")],
        [checks.variable(name, 3)],
    )
    lines = render(report, "table", width=80).splitlines()
    at = lines.index(f"{name}  [3]")  # whole, on one line: the terminal wraps it, grep finds it
    assert lines[at + 1].split() == ["ok", "1.00e+00"]  # its cells on the line below


@pytest.mark.parametrize("fmt", ["table"])
@pytest.mark.parametrize("width", [80, 120])
def test_piped_output_has_no_trailing_blanks(fmt: str, width: int) -> None:
    for result in (checks.every_kind(), checks.result(checks.every_kind(), checks.clean())):
        text = render(result, fmt, width=width)
        assert all(line == line.rstrip() for line in text.splitlines())


def _colour_of(text: str, cell: str) -> str:
    """The ANSI code just before ``cell`` on the line of a row."""
    match = re.search(r"((?:\x1b\[[0-9;]*m)*)" + re.escape(cell), text)
    assert match is not None, cell
    return match.group(1)


def test_colour_marks_problems_red_not_a_declared_none() -> None:
    """loss_1 × task1/w (stopped against `connected`) is a problem: red. loss_2 × task2/w is
    disconnected and nobody minds: no red. The same status, two colours."""
    report = checks.every_kind()
    text = render(report, "table", color=True, width=120)
    task1 = next(line for line in text.splitlines() if ANSI.sub("", line).startswith("task1/w"))
    task2 = next(line for line in text.splitlines() if ANSI.sub("", line).startswith("task2/w"))
    assert "31m" in _colour_of(task1, "stopped")  # red
    assert "31m" not in _colour_of(task2, "disconnected")
    assert "31m" in _colour_of(task2, "ok 2.50e-01")  # ok, but `none` lists it: a problem


def test_group_collapses_a_run_of_healthy_variables_with_a_count() -> None:
    report = big(variables=200, losses=2)
    rows = matrix_rows(report, "layer")
    assert len(rows) == 1
    (row,) = rows
    norms = [{loss.pair(v.name).norm for v in report.variables} for loss in report.losses]
    assert all(len(n) == 1 for n in norms)  # every variable alike: one norm, not a range
    assert row.detail == "200 in 200 layers"
    assert row.cells == tuple(f"ok {style.number(next(iter(n)))}" for n in norms)
    assert row.label == "encoder/block_00/attention/query … encoder/block_49/norm"
    text = render(report, "table", width=80)  # auto: 200 variables are grouped
    assert "200 in 200 layers" in text and "encoder/block_07/norm/gamma" not in text


def test_group_shows_the_smallest_and_largest_norm() -> None:
    """A group hides no vanishing member: its cell carries the range of its norms."""
    report = big(variables=60, losses=1)
    scaled = [
        dataclasses.replace(p, norm=10.0 ** -(i % 9)) for i, p in enumerate(report.losses[0].pairs)
    ]
    loss = dataclasses.replace(report.losses[0], pairs=tuple(scaled))
    report = dataclasses.replace(report, losses=(loss,))
    (row,) = matrix_rows(report, "layer")
    assert row.cells == ("ok 1.0e-08…1.0e+00",)
    assert "ok 1.0e-08…1.0e+00" in render(report, "table", width=80)


def test_group_keeps_every_problem_its_own_row() -> None:
    report = checks.every_kind()
    names = [r.label for r in matrix_rows(report, "layer")]
    for p in report.failures:
        assert p.variable in names


def test_group_gathers_identical_cut_points_into_one_row() -> None:
    report = big(variables=200, losses=2, stopped_every=4)
    text = " ".join(render(report, "table", width=120).split())
    assert text.count("none:stopped") == 1
    assert "encoder/block_00/attention/query/kernel (+49)" in text
    assert "StopGradient_0 and 49 more (StopGradient) at model.py:16, for" in text
    ungrouped = render(report, "table", width=120, group="none")
    assert ungrouped.count("none:stopped") == 50


def test_problems_only_shows_only_what_a_problem_names() -> None:
    report = checks.every_kind()
    text = render(report, "table", width=120, problems_only=True)
    rows = {line.split()[0] for line in text.splitlines() if line[:1].isalpha()}
    assert {"task1/w", "task2/w", "body/w", "spare"} <= rows
    clean = render(checks.clean(), "table", width=120, problems_only=True)
    assert "no problems: every pair is as expected" in clean
    assert "1 pair: 1 ok · 0 problems" in clean
