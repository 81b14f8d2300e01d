"""Markdown as GitHub renders it (markdown-it-py's GFM-like preset, a CommonMark parser):
names with ``|`` stay in their cell, ``expect.<loss>.none`` is text, not an HTML tag."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser

import pytest

from gradscope._src.report import render
from gradscope._src.report.md import code, prose
from gradscope._src.results import report as m
from tests import checks
from tests.report import samples


def gfm(text: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("gfm-like", {"linkify": False}).render(text)


class _Tables(HTMLParser):
    """Each table's rows as lists of cell texts; every tag seen."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.tags.add(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _parsed(html: str) -> _Tables:
    parser = _Tables()
    parser.feed(html)
    return parser


def _piped() -> m.Report:
    """every_kind with a `|` and a `<` in a variable's and a loss's names."""
    report = checks.every_kind()
    rename = {"task1/w": "head|1<w>"}

    def pair(p: m.PairResult) -> m.PairResult:
        return dataclasses.replace(p, variable=rename.get(p.variable, p.variable))

    losses = tuple(
        dataclasses.replace(
            loss, name=loss.name.replace("_1", "|1"), pairs=tuple(map(pair, loss.pairs))
        )
        for loss in report.losses
    )
    variables = tuple(
        dataclasses.replace(v, name=rename.get(v.name, v.name)) for v in report.variables
    )
    return dataclasses.replace(report, losses=losses, variables=variables)


def test_markdown_table_keeps_a_pipe_in_a_name_in_its_cell() -> None:
    report = _piped()
    tables = _parsed(gfm(render(report, "markdown")))
    header, *rows = tables.rows[: 1 + len(report.variables)]
    assert header == ["variable", "shape", "loss|1", "loss_2"]
    assert all(len(row) == len(header) for row in rows)
    assert [row[0] for row in rows] == [v.name for v in report.variables]


@pytest.mark.parametrize("fmt", ["inspect", "check"])
def test_markdown_prose_is_text_not_html(fmt: str) -> None:
    """The never-trained message says `expect.<loss>.none`: GitHub must show it as written."""
    result = checks.every_kind() if fmt == "inspect" else checks.result(checks.every_kind())
    html = gfm(render(result, "markdown"))
    assert "<loss>" not in html and "expect.&lt;loss&gt;.none" in html
    assert "loss" not in _parsed(html).tags


def test_markdown_check_summary_block_is_html_escaped() -> None:
    report = dataclasses.replace(checks.every_kind(), name="a <b> & c")
    html = gfm(render(checks.result(report), "markdown"))
    assert "a &lt;b&gt; &amp; c" in html and "<b>" not in html


@pytest.mark.parametrize(
    "text,shown",
    [
        ("a|b", "a|b"),
        ("w`1", "w`1"),
        ("<script>", "&lt;script&gt;"),
        ("**x**", "**x**"),
    ],
)
def test_code_span_shows_any_name_as_written(text: str, shown: str) -> None:
    html = gfm(f"| h |\n|---|\n| {code(text, table=True)} |\n\n- {code(text)}\n")
    assert html.count(f"<code>{shown}</code>") == 2, html


def test_prose_keeps_code_spans_and_escapes_the_rest() -> None:
    text = "`a|b` is cut at _x_ by *y* under expect.<loss>.none [link](http://x) ~~z~~ & co"
    html = gfm(f"- {prose(text)}\n\n| h |\n|---|\n| {prose(text, table=True)} |\n")
    plain = "is cut at _x_ by *y* under expect.&lt;loss&gt;.none [link](http://x) ~~z~~ &amp; co"
    assert html.count(plain) == 2, html
    assert html.count("<code>a|b</code>") == 2
    assert not {"em", "strong", "a", "s", "del"} & _parsed(html).tags


def test_markdown_marks_only_problems() -> None:
    """loss_1 × task1/w (stopped against `connected`) is a problem; loss_2 × task2/w
    (disconnected, nobody minds) is not: the same kind of status, two marks."""
    text = render(checks.every_kind(), "markdown")
    rows = {line.split("|")[1].strip(): line.split("|")[3:5] for line in text.splitlines()
            if line.startswith("| `")}  # fmt: skip
    assert rows["`task1/w`"][0].strip() == "❌ stopped"
    assert rows["`task2/w`"][1].strip() == "▫️ disconnected"
    assert rows["`body/w`"][0].strip().startswith("✅ ok")


def test_format_markdown_is_a_table_for_pull_requests() -> None:
    text = render(samples.inspect_report(), "markdown")
    assert "| variable | shape | `loss_5` |" in text
    assert "**never-trained**" in text


def test_check_formats_markdown_is_a_pull_request_comment() -> None:
    text = render(samples.CHECKS["known"](), "markdown")
    assert text.startswith("### ❌ gradscope check failed")
    assert "- ❌ **never-trained** `configs/x.yaml:11`:" in text
    assert "- ☑️ **known** **unexpected-none** `configs/x.yaml:41`:" in text
    assert "<details open><summary><code>configs/x.yaml</code>" in text
    assert "<details><summary><code>configs/y.yaml</code>" in text
    assert "| ✅ | `configs/y.yaml` |" in text


def test_diff_format_markdown_is_a_table_for_pull_requests() -> None:
    text = render(samples.diff(), "markdown")
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
