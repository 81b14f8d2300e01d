"""Every inspect format renders the same report; none is forgotten."""

from __future__ import annotations

import json

import pytest

from gradscope.report import INSPECT_FORMATS, Format, render
from gradscope.results import report as m
from gradscope.results.facts import CutPoint, VariableFacts


def _report() -> m.Report:
    cut = CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17")
    variables = (
        VariableFacts("body/w", (4, 16), "float32", True, "configs/x.yaml:8"),
        VariableFacts("spare", (3,), "float32", True, "configs/x.yaml:9"),
    )
    loss = m.LossResult(
        "loss_5",
        1.5,
        (
            m.PairResult("body/w", m.STOPPED, None, (4, 16), False, (cut,)),
            m.PairResult("spare", m.DISCONNECTED, None, (3,), False),
        ),
    )
    problem = m.Problem(
        None,
        "spare",
        m.NEVER_TRAINED,
        "`spare` is trainable but no loss gives it a gradient",
        (),
        "configs/x.yaml",
        9,
    )
    return m.Report("configs/x.yaml", "x", "2.21.0", "CPU:0", variables, (loss,), (problem,))


@pytest.mark.parametrize("fmt", list(INSPECT_FORMATS))
def test_format_renders_every_member(fmt: Format) -> None:
    text = render(_report(), fmt.value)
    assert text.endswith("\n")
    assert "body/w" in text and "spare" in text


def test_format_table_has_colour_only_when_asked() -> None:
    assert "\x1b[" not in render(_report(), "table")
    assert "\x1b[" in render(_report(), "table", color=True)


def test_format_table_names_the_cut_point_and_line() -> None:
    text = render(_report(), "table")
    assert "frozen (StopGradient) at configs/x.yaml:17" in text
    assert "never-trained" in text


def test_format_json_is_the_contract_shape() -> None:
    data = json.loads(render(_report(), "json"))
    assert data["losses"]["loss_5"]["variables"]["body/w"] == {
        "status": "none:stopped",
        "norm": None,
        "shape": [4, 16],
        "sparse": False,
        "cut_points": [
            {
                "node": "frozen",
                "op": "StopGradient",
                "kind": "stopped",
                "source": "configs/x.yaml:17",
            }
        ],
    }
    assert data["problems"][0]["kind"] == "never-trained"


def test_format_markdown_is_a_table_for_pull_requests() -> None:
    text = render(_report(), "markdown")
    assert "| variable | shape | `loss_5` |" in text
    assert "**never-trained**" in text
