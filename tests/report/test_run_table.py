"""``gradscope run``'s table at 200 sources and 80 columns: problems first to the eye, one
explanation per group, nothing hidden a row would have shown (a hand-made report, no TensorFlow)."""

from __future__ import annotations

import pytest

from gradscope._src.analysis import run as run_policy
from gradscope._src.report import render
from gradscope._src.results import causes
from gradscope._src.results import run as rr

HEAD = causes.UnreadOutput(names=("aux",), model="detector", line="train.py:41")


def _report(blocks: int = 100) -> rr.RunReport:
    """A ResNet-sized call: ``blocks`` healthy layers (kernel and bias), norms from 1e-7 up,
    then an ``aux`` head no loss reads."""
    sources = [
        rr.SourceResult(f"block_{i:03d}/{part}", "ok", 10.0 ** -(7 - i * 7 // blocks), (8,), False)
        for i in range(blocks)
        for part in ("kernel", "bias")
    ]
    sources += [
        rr.SourceResult(f"aux/{part}", "none:disconnected", None, (8, 3), False, cause=HEAD)
        for part in ("kernel", "bias")
    ]
    call = rr.CallResult(
        "train.py:44", "GradientTape.gradient", rr.EAGER, 1, "train.py:41", 1.5, tuple(sources)
    )
    problems = tuple(run_policy.problems_of((call,), []))
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", (call,), problems)


def _lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.mark.parametrize("width", [80, 200])
def test_run_table_groups_a_big_call_and_keeps_problems_whole(width: int) -> None:
    text = render(_report(), "table", width=width)
    lines = _lines(text)
    assert max(len(line) for line in lines) <= width
    assert len(lines) < 20  # 202 sources: not 202 rows
    at = next(i for i, line in enumerate(lines) if line.startswith("block_000 … block_099"))
    # the group's cells on its line, or (80 columns) on the next, in the columns' places
    grouped = lines[at] if "layers" in lines[at] else lines[at + 1]
    assert "200 in 100 layers" in grouped
    assert "1.0e-07…1.0e-01" in grouped  # the smallest and largest norm: nothing hidden
    kernel = next(line for line in lines if line.startswith("aux/kernel"))
    bias = next(line for line in lines if line.startswith("aux/bias"))
    assert kernel.split()[-1] == bias.split()[-1] == "[1]"  # one explanation for the two
    note = text[text.index("[1]  ") :]
    assert " ".join(note.split()).startswith(f"[1] {HEAD}")  # whole, wrapped only at spaces
    assert text.count("reaches only output") == 1


def test_run_table_problems_only_hides_healthy_sources() -> None:
    text = render(_report(), "table", width=80, problems_only=True)
    assert "block_" not in text
    assert "(200 more sources ok, not shown: --problems)" in text
    assert "aux/kernel" in text and "aux/bias" in text


def test_run_table_group_none_keeps_a_row_per_source() -> None:
    text = render(_report(blocks=5), "table", width=200, group="none")
    assert all(f"block_{i:03d}/kernel" in text for i in range(5))


def test_run_table_single_explanation_stays_inline_when_wide() -> None:
    """One source with its own explanation and room for it: on its row, no footnote."""
    report = _report(blocks=2)
    call = report.calls[0]
    call = rr.CallResult(**{**call.__dict__, "sources": call.sources[:-1]})
    report = rr.RunReport(**{**report.__dict__, "calls": (call,)})
    text = render(report, "table", width=200)
    row = next(line for line in _lines(text) if line.startswith("aux/kernel"))
    assert row.rstrip().endswith("does not read") and "[1]" not in text


@pytest.mark.parametrize("width", [60, 80])
def test_run_table_long_names_get_their_own_line_and_the_columns_stay_aligned(width: int) -> None:
    """Narrow: a name (or a group's ``first … last``) too long for the room goes above its
    row; shape, status and norm stay in columns under their headings, nothing past the width."""
    report = _report()
    call = report.calls[0]
    long = [rr.SourceResult(f"a_rather_long_model_name/{s.name}", s.status, s.norm, s.shape,
                            s.sparse, cause=s.cause, attribute=f"blocks[{i // 2}].{s.name[-4:]}")
            for i, s in enumerate(call.sources)]  # fmt: skip
    call = rr.CallResult(**{**call.__dict__, "sources": tuple(long)})
    problems = tuple(run_policy.problems_of((call,), []))
    report = rr.RunReport(**{**report.__dict__, "calls": (call,), "problems": problems})
    lines = _lines(render(report, "table", width=width, group="layer"))
    assert max(len(line) for line in lines) <= width
    head = next(line for line in lines if "status" in line and "norm" in line)
    at = next(i for i, line in enumerate(lines)
              if line.startswith("a_rather_long_model_name/block_000 …"))  # fmt: skip
    row = next(i for i in range(at, len(lines)) if "200 in 100 layers" in lines[i])
    label = " ".join(x.strip() for x in lines[at:row])  # wrapped at spaces when longer
    assert label.endswith("block_099 (blocks[0] … blocks[99])")  # its layers' attributes
    cells = lines[row]
    assert cells.index("200 in 100 layers") == head.index("shape")
    assert cells.index("ok") == head.index("status")
    assert cells.index("1.0e-07…1.0e-01") == head.index("norm")
    kernel = lines.index(next(x for x in lines if x.startswith("a_rather_long_model_name/aux/k")))
    assert lines[kernel + 1].index("none:disconnected") == head.index("status")
    assert lines[kernel + 1].rstrip().endswith("[1]")


def _helper_calls() -> rr.RunReport:
    """One helper's gradient call (helpers.py:3) reached from two lines: ``w`` gets no
    gradient through the first, ``v`` none through the second."""

    def call(via: str, name: str) -> rr.CallResult:
        source = rr.SourceResult(name, "none:disconnected", None, (2,), False)
        return rr.CallResult("helpers.py:3", "GradientTape.gradient", rr.EAGER, 1, "helpers.py:2",
                             1.0, (source,), via=(via,))  # fmt: skip

    calls = (call("train.py:10", "w"), call("train.py:20", "v"))
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls,
                        tuple(run_policy.problems_of(calls, ())))  # fmt: skip


def test_run_table_problems_are_the_findings_at_their_sites_via_their_callers() -> None:
    report = _helper_calls()
    assert [f.where for f in report.findings()] == [
        "helpers.py:3 (via train.py:10)", "helpers.py:3 (via train.py:20)"]  # fmt: skip
    text = render(report, "table", width=120)
    problems = text.split("Problems")[1].splitlines()
    assert [" ".join(line.split()) for line in problems[2:4]] == [
        "unexpected-none helpers.py:3 (via train.py:10) w",
        "unexpected-none helpers.py:3 (via train.py:20) v",
    ]
    assert text.rstrip().splitlines()[-1].startswith("2 call(s) at 2 site(s) · 2 problems ·")


def test_run_table_reads_the_findings_not_the_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summary, the problems and the rows marked wrong are the findings' (every format
    renders a result from its findings): one finding left out is gone from all three."""
    report = _helper_calls()
    first = report.findings()[:1]
    monkeypatch.setattr(rr.RunReport, "findings", lambda self: first)
    text = render(report, "table", width=120)
    assert "2 problems" not in text and " · 1 problem · " in text
    assert "(via train.py:20) v" not in " ".join(text.split())


def test_run_notebook_problems_are_the_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A notebook's Problems table lists the findings, each with its call's step."""
    from gradscope._src.report.notebook import render as notebook_html

    report = _helper_calls()
    assert [(f.variable, f.step) for f in report.findings()] == [("w", 1), ("v", 1)]
    shown = notebook_html(report)
    assert "<code>w</code>" in shown.split("Problems")[1]
    first = report.findings()[:1]
    monkeypatch.setattr(rr.RunReport, "findings", lambda self: first)
    assert "<code>v</code>" not in notebook_html(report).split("Problems")[1]
