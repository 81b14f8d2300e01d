"""``gradscope graph`` and the picture formats of ``inspect`` as a user runs them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gradscope._src.report import graphviz
from tests.conftest import RunCli
from tests.report import parse

pytestmark = pytest.mark.tf

needs_dot = pytest.mark.skipif(
    graphviz.find() is None, reason="Graphviz's dot is not installed (apt-get install graphviz)"
)

STE = "configs/straight-through.yaml"


def _without_dot() -> dict[str, str]:
    return {**os.environ, graphviz.DOT_ENV: ""}


def test_graph_dot_on_standard_output(run_cli: RunCli) -> None:
    result = run_cli("graph", STE, "--loss", "loss_ste")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    d = parse.dot(result.stdout)
    assert d.edge("round_gap", "gap_frozen")["class"] == "cut"
    assert d.edge("h", "ste")["class"] == "gradient"


def test_graph_mermaid_file_by_extension(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "ste.mmd"
    result = run_cli("graph", STE, "--loss", "loss_naive", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = out.read_text()
    assert text.splitlines()[1] == "flowchart LR"
    assert parse.mermaid(text).edge("h", "h_rounded")["label"].startswith("✂ Round")


def test_graph_expand_draws_every_op(run_cli: RunCli) -> None:
    result = run_cli("graph", STE, "--loss", "loss_ste", "--expand", "--format", "mermaid")
    assert result.returncode == 0, result.stderr
    names = parse.mermaid(result.stdout).names()
    assert "gap_frozen/StopGradient" in names and "h/MatMul" in names


@needs_dot
def test_graph_svg_png_and_html_through_graphviz(run_cli: RunCli, tmp_path: Path) -> None:
    for name in ("ste.svg", "ste.png", "ste.html"):
        result = run_cli("graph", STE, "--loss", "loss_ste", "-o", str(tmp_path / name))
        assert result.returncode == 0, (name, result.stderr)
    svg = (tmp_path / "ste.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert svg.count('class="edge cut"') == 1 and 'class="node variable ok"' in svg
    assert "✂ stop_gradient · line" in svg
    assert (tmp_path / "ste.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page = (tmp_path / "ste.html").read_text()
    assert "<svg" in page and "Every loss × every variable" in page
    assert "<script" not in page and "<link" not in page


def test_graph_svg_without_graphviz_says_how_to_install(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "ste.svg"
    result = run_cli("graph", STE, "--loss", "loss_ste", "-o", str(out), env=_without_dot())
    assert result.returncode == 2
    assert "apt-get install graphviz" in result.stderr and "brew install graphviz" in result.stderr
    assert ".dot and .mmd pictures need nothing" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not out.exists()


def test_graph_usage_errors(run_cli: RunCli, tmp_path: Path) -> None:
    unknown = run_cli("graph", STE, "--loss", "loss_ste", "-o", str(tmp_path / "x.jpeg"))
    assert unknown.returncode == 2 and "from .jpeg" in unknown.stderr
    several = run_cli("graph", STE)
    assert several.returncode == 2
    assert "pick one with --loss: loss_ste, loss_naive" in several.stderr
    clash = run_cli("graph", STE, "--loss", "loss_ste", "-o", "x.svg", "--format", "dot")
    assert clash.returncode == 2 and "contradicts" in clash.stderr
    for result in (unknown, several, clash):
        assert "Traceback" not in result.stderr


def test_graph_single_loss_needs_no_loss_option(run_cli: RunCli, write_spec) -> None:
    path = write_spec(
        """
        gradscope: 1
        variables:
          w: 2.0
        nodes:
          - {name: y, op: square, inputs: [w]}
        losses:
          only: y
        """
    )
    result = run_cli("graph", path, "--format", "mermaid")
    assert result.returncode == 0, result.stderr
    assert parse.mermaid(result.stdout).edge("w", "y")["style"].startswith("stroke:#37474f")


def test_graph_failed_run_leaves_the_old_picture(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "old.dot"
    out.write_text("previous")
    result = run_cli("graph", STE, "--loss", "nope", "-o", str(out))
    assert result.returncode == 2 and "unknown loss 'nope'" in result.stderr
    assert out.read_text() == "previous"


def test_inspect_markdown_embeds_mermaid_for_the_loss_with_a_problem(
    run_cli: RunCli, write_spec
) -> None:
    path = write_spec(
        """
        gradscope: 1
        variables:
          w: {values: [1.5, 2.5]}
          v: {values: [1.0, 1.0]}
        nodes:
          - {name: r, op: round, inputs: [w]}
          - {name: a, op: reduce_sum, inputs: [r]}
          - {name: b, op: reduce_sum, inputs: [v]}
        losses:
          broken: a
          fine: b
        expect:
          broken:
            connected: [w]
        """
    )
    result = run_cli("inspect", path, "--format", "markdown")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.count("```mermaid") == 1 and "**Gradient flow of `broken`**" in text
    block = text.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert parse.mermaid(block).edge("w", "r")["label"] == "✂ Round (no gradient) · line 7"


def test_inspect_html_without_graphviz_warns_and_writes_the_table(
    run_cli: RunCli, tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    result = run_cli("inspect", STE, "--format", "html", "-o", str(out), env=_without_dot())
    assert result.returncode == 0, result.stderr
    assert "the page has no pictures" in result.stderr
    page = out.read_text()
    assert "Every loss × every variable" in page and "DOT source" in page
