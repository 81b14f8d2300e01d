"""The Mermaid picture of the seed scenarios (nodes, links, colours, labels), and its embedding
in markdown reports for each loss with a problem."""

from __future__ import annotations

import dataclasses

import pytest

from gradscope._src.report import markdown, mermaid, palette, style
from gradscope._src.results import report as m
from tests.pictures import line, node_gradients, seed_reference, seed_report
from tests.report import parse

RED = f"stroke:{palette.CUT_COLOR}"
GREY = f"stroke:{palette.VALUE_COLOR}"
SOLID = f"stroke:{palette.GRADIENT_COLOR}"


def _drawing(config: str, loss: str) -> parse.Drawing:
    return parse.mermaid(mermaid.picture(seed_report(config), loss))


def _red(d: parse.Drawing) -> list[dict[str, str]]:
    return [a for a in d.edges.values() if a["style"].startswith(RED)]


def test_mermaid_text_escapes_quotes_and_breaks_lines() -> None:
    assert mermaid.text('a "b" <c> #1\nd') == "a #quot;b#quot; #lt;c#gt; #35;1<br/>d"


@pytest.mark.tf
def test_mermaid_multitask_leaves_the_other_head_out() -> None:
    ref = seed_reference("multitask")["loss_1"]
    assert ref["task2/w"].none
    d = _drawing("multitask", "loss_1")
    on_paths = [a["label"] for a in d.nodes.values() if not a["subgraph"]]
    assert not [n for n in on_paths if n.startswith("task2")]
    # the head the loss never reads is drawn beside the picture, marked, not only named
    (unreached,) = [a for a in d.nodes.values() if a["subgraph"] == "off_path"]
    assert unreached["label"].startswith("task2\n") and "no path to loss_1" in unreached["label"]
    assert unreached["class"] == "off_none"
    assert all(a["style"].startswith(SOLID) and a["arrow"] == "-->" for a in d.edges.values())
    node_id, attrs = d.node("body/w")
    assert attrs["class"] == "ok" and attrs["shape"] == '["'
    assert attrs["label"] == f"body/w\nok {style.number(ref['body/w'].norm)}"
    assert d.nodes["loss"]["class"] == "loss" and d.nodes["loss"]["label"].startswith("loss_1\n")
    assert (
        d.node("task1/pre")[1]["label"]
        == f"task1/pre\nmatmul · line {line('multitask', 'task1/pre')}"
    )
    assert d.edge("body/w", "body/pre") and node_id == "v0"


@pytest.mark.tf
def test_mermaid_chained_heads_cut_and_sparse() -> None:
    grads = node_gradients("chained-heads", "loss2_stopped")
    assert grads["head1_frozen"] and not grads["head1"]
    d = _drawing("chained-heads", "loss2_stopped")
    cut = d.edge("head1", "head1_frozen")
    assert _red(d) == [cut]
    assert cut["label"] == f"✂ stop_gradient · line {line('chained-heads', 'head1_frozen')}"
    assert "cut" in d.node("head1_frozen")[1]["class"].split()
    assert d.edge("vectors", "head1")["style"].startswith(GREY)
    assert d.node("embedding")[1]["class"] == "none"
    sparse = _drawing("chained-heads", "loss1").edge("embedding", "vectors")
    assert seed_reference("chained-heads")["loss1"]["embedding"].sparse
    assert sparse["arrow"] == "-.->" and sparse["label"] == "sparse"


@pytest.mark.tf
def test_mermaid_assign_cut() -> None:
    assert seed_reference("assign-breaks-tape")["o"]["patch"].none
    d = _drawing("assign-breaks-tape", "o")
    cut = d.edge("patch", "write_patch")
    assert _red(d) == [cut]
    assert cut["label"] == f"✂ assign · line {line('assign-breaks-tape', 'write_patch')}"
    assert d.node("patch")[1]["class"] == "none" and d.node("x")[1]["class"] == "ok"
    assert d.edge("write_patch", "x_t")["style"].startswith(GREY)


@pytest.mark.tf
def test_mermaid_straight_through_one_cut_and_the_other_path_flows() -> None:
    grads = node_gradients("straight-through", "loss_ste")
    assert grads["ste"] and grads["h"] and not grads["round_gap"]
    d = _drawing("straight-through", "loss_ste")
    assert _red(d) == [d.edge("round_gap", "gap_frozen")]
    assert d.edge("h", "ste")["style"].startswith(SOLID)
    assert d.edge("w", "h")["style"].startswith(SOLID)
    assert d.edge("h", "h_rounded")["style"].startswith(GREY)
    assert d.node("w")[1]["class"] == "ok"


def _with_problem(report: m.Report, loss: str, variable: str) -> m.Report:
    problem = m.Problem.problem(loss, variable, m.UNEXPECTED_NONE, f"`{variable}` gets no gradient")
    return dataclasses.replace(report, problems=(problem,))


@pytest.mark.tf
def test_mermaid_embedded_in_markdown_only_for_losses_with_problems() -> None:
    report = seed_report("chained-heads")
    assert not report.problems  # the config's expectations hold: no picture at all
    assert "```mermaid" not in markdown.render(report)
    broken = _with_problem(report, "loss2_stopped", "output1")
    text = markdown.render(broken)
    assert text.count("```mermaid") == 1
    assert "**Gradient flow of `loss2_stopped`**" in text
    block = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert block == mermaid.picture(report, "loss2_stopped")
    assert mermaid.problem_losses(broken) == ["loss2_stopped"]


@pytest.mark.tf
def test_mermaid_never_trained_variable_pictures_the_losses_that_differentiate_it() -> None:
    report = seed_report("chained-heads")
    never = m.Problem.problem(None, "output1", m.NEVER_TRAINED, "`output1` never trains")
    broken = dataclasses.replace(report, problems=(never,))
    # output1 is on a path to every loss but output2's own; excluded (vars) from three
    assert set(seed_reference("chained-heads")["loss2_own"]) == {"output2"}
    assert mermaid.problem_losses(broken) == ["loss1", "loss2", "loss1_own", "loss2_stopped"]


def test_mermaid_embed_refuses_pictures_too_big_for_github(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.report.test_format_html import picture_report

    report = picture_report()
    monkeypatch.setattr(mermaid, "MAX_LINKS", 1)
    text = mermaid.embed(report, "loss_5")
    assert "```mermaid" not in text and "too many to draw here" in text
    assert "gradscope graph configs/x.yaml --loss loss_5 -o loss_5.svg" in text
