"""The DOT picture of the seed scenarios: nodes, edges, colours and labels, held to bare
TensorFlow (which variables and which node outputs get a gradient)."""

from __future__ import annotations

import pytest

from gradscope._src.report import dot, palette, style
from tests.pictures import line, node_gradients, seed_reference, seed_report
from tests.report import parse

RED, GREY, SOLID, ORANGE = (
    palette.CUT_COLOR,
    palette.VALUE_COLOR,
    palette.GRADIENT_COLOR,
    palette.NAN_COLOR,
)
OK_FILL, NONE_FILL = palette.CLASS_COLORS["ok"][0], palette.CLASS_COLORS["none"][0]


def _drawing(config: str, loss: str) -> parse.Drawing:
    return parse.dot(dot.picture(seed_report(config), loss))


def test_dot_quote_escapes_what_dot_reads_specially() -> None:
    assert dot.quote('a "b" \\ c\nd') == '"a \\"b\\" \\\\ c\\nd"'


def test_dot_picture_needs_a_run_with_pictures() -> None:
    from tests.report.samples import inspect_report as _report

    with pytest.raises(ValueError, match="pictures=True"):
        dot.picture(_report(), "loss_5")


def _on_paths(d: parse.Drawing) -> list[str]:
    """Names of the boxes on a path to the loss (not those drawn apart as unreached)."""
    return [a["label"].split("\n")[0] for a in d.nodes.values()
            if "off-path" not in a.get("class", "")]  # fmt: skip


@pytest.mark.tf
def test_dot_multitask_leaves_the_other_head_out() -> None:
    ref = seed_reference("multitask")["loss_1"]
    assert ref["task2/w"].none and ref["task2/b"].none  # bare TF: no path to loss_1
    text = dot.picture(seed_report("multitask"), "loss_1")
    d = parse.dot(text)
    assert not [n for n in _on_paths(d) if n.startswith("task2")]
    assert "no path to loss_1: task2/w, task2/b" in text
    # the head the loss never reads is drawn, marked, in a dashed cluster beside the picture
    assert "subgraph cluster_off_path {" in text
    (unreached,) = [a for a in d.nodes.values() if "off-path" in a.get("class", "")]
    assert unreached["label"] == "task2\nw, b\nno path to loss_1"
    assert unreached["fillcolor"] == NONE_FILL
    grads = node_gradients("multitask", "loss_1")
    for name in ("body/pre", "body/h", "body/act", "task1/pre", "task1/logits", "task1/ce"):
        assert grads[name], name  # every node drawn gets a gradient ...
        assert name in d.names()
    for attrs in d.edges.values():  # ... so every edge is solid and dark
        assert attrs["color"] == SOLID and attrs["class"] == "gradient"
    for variable in ("body/w", "body/b", "task1/w", "task1/b"):
        _, attrs = d.node(variable)
        assert attrs["fillcolor"] == OK_FILL and attrs["class"] == "variable ok"
        assert attrs["label"] == f"{variable}\nok {style.number(ref[variable].norm)}"
    assert d.edge("task1/loss", "loss")["class"] == "gradient"
    assert d.edge("body/act", "task1/pre")["color"] == SOLID


@pytest.mark.tf
def test_dot_chained_heads_cut_at_the_stop_gradient() -> None:
    ref = seed_reference("chained-heads")["loss2_stopped"]
    grads = node_gradients("chained-heads", "loss2_stopped")
    d = _drawing("chained-heads", "loss2_stopped")
    cut = d.edge("head1", "head1_frozen")
    assert cut["color"] == RED and cut["class"] == "cut" and cut["penwidth"] == "2"
    assert cut["label"] == f"✂ stop_gradient · line {line('chained-heads', 'head1_frozen')}"
    assert d.node("head1_frozen")[1]["color"] == RED  # the cut node has a red border
    assert grads["head1_frozen"] and not grads["head1"]  # bare TF: the gradient stops there
    for src, dst in (("embedding", "vectors"), ("vectors", "head1"), ("output1", "head1")):
        assert d.edge(src, dst)["color"] == GREY, (src, dst)
    for variable in ("embedding", "output1"):
        assert ref[variable].none
        assert d.node(variable)[1]["fillcolor"] == NONE_FILL
        assert d.node(variable)[1]["label"] == f"{variable}\nstopped"
    assert not ref["output2"].none and d.node("output2")[1]["fillcolor"] == OK_FILL
    assert d.edge("head1_frozen", "head2_detached")["color"] == SOLID
    assert [a for a in d.edges.values() if a["color"] == RED] == [cut]


@pytest.mark.tf
def test_dot_chained_heads_sparse_gradient_is_dashed() -> None:
    assert seed_reference("chained-heads")["loss1"]["embedding"].sparse  # IndexedSlices
    edge = _drawing("chained-heads", "loss1").edge("embedding", "vectors")
    assert edge["style"] == "dashed" and edge["label"] == "sparse" and edge["color"] == SOLID


@pytest.mark.tf
def test_dot_assign_cut_is_red_at_the_write() -> None:
    ref = seed_reference("assign-breaks-tape")["o"]
    assert ref["patch"].none and not ref["x"].none
    d = _drawing("assign-breaks-tape", "o")
    cut = d.edge("patch", "write_patch")
    assert cut["color"] == RED
    assert cut["label"] == f"✂ assign · line {line('assign-breaks-tape', 'write_patch')}"
    assert d.node("patch")[1]["fillcolor"] == NONE_FILL
    assert d.node("patch")[1]["label"] == "patch\nassign"
    assert d.node("x")[1]["fillcolor"] == OK_FILL
    assert d.edge("write_patch", "x_t")["color"] == GREY  # the copied value, no gradient
    assert d.edge("x", "x_t")["color"] == SOLID
    assert "base" not in _on_paths(d)  # base only feeds o_fixed: drawn apart, unreached
    assert [a["label"] for a in d.nodes.values() if "off-path" in a.get("class", "")] == [
        "base\nno path to o"
    ]


@pytest.mark.tf
def test_dot_straight_through_one_cut_and_the_other_path_flows() -> None:
    assert not seed_reference("straight-through")["loss_ste"]["w"].none
    grads = node_gradients("straight-through", "loss_ste")
    d = _drawing("straight-through", "loss_ste")
    red = [(k, a) for k, a in d.edges.items() if a["color"] == RED]
    assert len(red) == 1
    assert red[0][1] == d.edge("round_gap", "gap_frozen")
    assert red[0][1]["label"] == f"✂ stop_gradient · line {line('straight-through', 'gap_frozen')}"
    assert grads["gap_frozen"] and not grads["round_gap"]
    assert grads["h"] and grads["ste"]  # the gradient still flows on the other path
    for src, dst in (("w", "h"), ("h", "ste"), ("gap_frozen", "ste"), ("ste", "ste_sq")):
        assert d.edge(src, dst)["color"] == SOLID, (src, dst)
    assert not grads["h_rounded"]
    assert d.edge("h", "h_rounded")["color"] == GREY
    assert d.node("w")[1]["fillcolor"] == OK_FILL and d.node("w")[1]["label"].endswith("✂")
    assert "naive_sq" not in d.names()  # on no path to loss_ste


@pytest.mark.tf
def test_dot_straight_through_naive_round_is_the_cut() -> None:
    assert seed_reference("straight-through")["loss_naive"]["w"].none
    grads = node_gradients("straight-through", "loss_naive")
    d = _drawing("straight-through", "loss_naive")
    cut = d.edge("h", "h_rounded")
    line_ = line("straight-through", "h_rounded")
    assert cut["color"] == RED and cut["label"] == f"✂ Round (no gradient) · line {line_}"
    assert grads["h_rounded"] and not grads["h"]
    assert d.edge("w", "h")["color"] == GREY


SEEDS = ["multitask", "chained-heads", "assign-breaks-tape", "straight-through"]


@pytest.mark.tf
@pytest.mark.parametrize("config", SEEDS)
def test_dot_solid_edges_only_where_bare_tensorflow_has_gradients(config: str) -> None:
    report = seed_report(config)
    for loss in report.losses:
        grads = node_gradients(config, loss.name)
        ref = seed_reference(config)[loss.name]
        d = parse.dot(dot.picture(report, loss.name))
        names = {node_id: attrs["label"].split("\n")[0] for node_id, attrs in d.nodes.items()}
        for (a, b), attrs in d.edges.items():
            if attrs["color"] not in (SOLID, ORANGE):
                continue
            for end in (a, b):
                name = names[end]
                if end.startswith("n"):
                    assert grads.get(name, True), f"{loss.name}: {name} gets no gradient"
                elif end.startswith("v"):
                    assert not ref[name].none, f"{loss.name}: {name}"
        flowing = {"variable ok", "variable zero", "variable nan"}
        for node_id, attrs in d.nodes.items():
            if node_id.startswith("v") and names[node_id] in ref:
                has = not ref[names[node_id]].none
                assert (attrs["class"] in flowing) == has, f"{loss.name}: {names[node_id]}"
