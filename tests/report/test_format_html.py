"""The HTML page: self-contained (nothing to fetch), the inspect table, one picture per loss,
and a useful page without Graphviz."""

from __future__ import annotations

import dataclasses
import re

import pytest

from gradscope._src.engine.picture.draw import (
    CUT,
    GRADIENT,
    LOSS,
    OP,
    VALUE,
    VARIABLE,
    Box,
    Link,
    Picture,
)
from gradscope._src.report import dot, graphviz, html, mermaid
from gradscope._src.results import report as m
from gradscope._src.results.facts import CutPoint
from tests.pictures import seed_report
from tests.report import parse
from tests.report.samples import inspect_report as _report

needs_dot = pytest.mark.skipif(
    graphviz.find() is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)


def picture_report() -> m.Report:
    """The report of test_formats with a hand-drawn picture of its loss: body/w feeds `h`,
    whose value reaches `frozen` (a stop_gradient, the cut), which feeds the loss node."""
    cut = CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17")
    boxes = (
        Box("v0", VARIABLE, "body/w", index=0),
        Box("n0", OP, "h", "matmul", "configs/x.yaml:12", "h"),
        Box("n1", OP, "frozen", "stop_gradient", "configs/x.yaml:17", "frozen"),
        Box("n2", OP, "loss5 <&>", "reduce_sum", "configs/x.yaml:19", "loss5"),
        Box("loss", LOSS, "loss_5"),
    )
    links = (
        Link("v0", "n0", VALUE),
        Link("n0", "n1", CUT, cuts=(cut,)),
        Link("n1", "n2", GRADIENT, nan=True),
        Link("n2", "loss", GRADIENT),
    )
    pic = Picture("loss_5", boxes, links, off_path=("spare",))
    return dataclasses.replace(_report(), pictures=(pic,))


def _only_namespaces(text: str) -> bool:
    """Every URL in the page is an XML namespace name, which nothing ever fetches."""
    urls = re.findall(r'[\w:-]+="?https?://[^"\s]*', text)
    return all(u.startswith(("xmlns=", "xmlns:xlink=")) for u in urls) and "url(" not in text


def test_html_page_is_self_contained_with_table_and_picture() -> None:
    report = picture_report()
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><g class="edge cut"></g></svg>'
    page = html.page(report, {"loss_5": svg})
    assert page.startswith("<!doctype html>") and page.endswith("</html>\n")
    assert svg in page
    assert (  # a None no expectation contradicts is grey, not red: only problems are red
        '<td class="cell idle" title="none:stopped; frozen (StopGradient) at configs/x.yaml:17">'
        in page
    )
    assert "<code>body/w</code>" in page and "stopped" in page
    assert "never-trained" in page and "no path to loss_5: spare" in page
    assert "<code>spare</code> is trainable but no loss gives it a gradient" in page
    assert '<a href="#loss-loss_5">' in page
    for tag in ("<script", "<link", "<img", "<iframe", "@import"):
        assert tag not in page
    assert _only_namespaces(page)


def test_html_page_without_graphviz_says_how_to_install_it() -> None:
    report = picture_report()
    page = html.page(report, {"loss_5": None})
    assert "apt-get install graphviz" in page and "brew install graphviz" in page
    assert "<details><summary>DOT source</summary>" in page
    assert "digraph &quot;loss_5&quot;" in page  # the DOT, escaped
    assert "loss5 &lt;&amp;&gt;" in page and "loss5 <&>" not in page


def test_html_render_without_dot_still_writes_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(graphviz.DOT_ENV, "")
    page = html.render(picture_report())
    assert "Every loss × every variable" in page and "apt-get install graphviz" in page


def test_html_hand_drawn_picture_in_dot_and_mermaid() -> None:
    report = picture_report()
    d = parse.dot(dot.picture(report, "loss_5"))
    assert d.edge("h", "frozen")["label"] == "✂ stop_gradient · line 17"
    assert d.edge("frozen", "loss5 <&>")["color"] == "#ef6c00"  # NaN: orange
    assert d.edge("frozen", "loss5 <&>")["label"] == "NaN/Inf"
    assert d.node("frozen")[1]["class"] == "op cut"
    text = mermaid.picture(report, "loss_5")
    assert '("loss5 #lt;&#gt;<br/>reduce_sum · line 19")' in text  # Mermaid's entity codes
    chart = parse.mermaid(text)
    assert chart.edge("frozen", "loss5 <&>")["style"].startswith("stroke:#ef6c00")


@needs_dot
@pytest.mark.tf
def test_html_render_lays_out_every_loss_with_graphviz() -> None:
    report = seed_report("straight-through")
    page = html.render(report)
    assert page.count("<svg") == 2  # loss_ste and loss_naive
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert page.count('class="edge cut"') == 2  # one red cut in each picture
    assert _only_namespaces(page)


def test_html_cells_are_red_only_for_problems() -> None:
    from tests import checks

    page = html.page(checks.every_kind(), {})
    task1 = page[page.index("<code>task1/w</code></td>") :].split("</tr>")[0]
    task2 = page[page.index("<code>task2/w</code></td>") :].split("</tr>")[0]
    assert 'class="cell none"' in task1  # stopped against `connected`: a problem
    assert 'class="cell idle"' in task2  # disconnected from loss_2, which nobody minds
