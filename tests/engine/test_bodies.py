"""Cut points inside nested tf.functions, loop and branch bodies, custom gradients and integer
chains, each pair checked against bare TensorFlow (eager and traced) - issue 15, 1-4."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

import gradscope
from gradscope._src.results import report as m
from tests.frontends.python.bare import DATA, line_of, load_file
from tests.frontends.python.truth import agrees, cut_sources

pytestmark = pytest.mark.tf

BODIES = DATA / "truth" / "bodies.py"


@pytest.fixture(scope="module")
def cases() -> ModuleType:
    return load_file(BODIES)


def _at(text: str) -> str:
    return f"{BODIES}:{line_of(BODIES, text)}"


def _run(cases: ModuleType, name: str) -> tuple[m.Report, dict[str, Any]]:
    report = gradscope.inspect(getattr(cases, name))
    fresh = getattr(cases, name)()
    return report, fresh


def _ends(sources: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Cut points with sources made absolute-insensitive (reports show paths relative to cwd)."""
    return [(op, kind, src.rsplit("/", 1)[-1]) for op, kind, src in sources]


def _here(text: str) -> str:
    return f"bodies.py:{line_of(BODIES, text)}"


def test_bodies_nested_function_names_the_op_inside(cases: ModuleType) -> None:
    report, fresh = _run(cases, "nested_function")
    seen = agrees(report, fresh["losses"], fresh["variables"])
    assert seen["stopped"]["w"] == m.STOPPED
    assert _ends(cut_sources(report, "stopped", "w")) == [
        ("StopGradient", "stopped", _here("# nested: stop"))
    ]
    assert seen["argmax"]["v"] == m.NONDIFFERENTIABLE
    assert _ends(cut_sources(report, "argmax", "v")) == [
        ("ArgMax", "nondifferentiable", _here("# nested: argmax"))
    ]
    assert seen["twice"]["w"] == m.STOPPED  # a function calling a function
    assert _ends(cut_sources(report, "twice", "w")) == [
        ("StopGradient", "stopped", _here("# nested: stop"))
    ]


def test_bodies_while_loop_stop_is_a_cut_point(cases: ModuleType) -> None:
    report, fresh = _run(cases, "while_loop")
    seen = agrees(report, fresh["losses"], fresh["variables"])
    # TensorFlow's traced while_loop hands back zeros (eagerly: None); the cut is named
    assert seen["all_stopped"]["w"] == m.ZERO
    assert _ends(cut_sources(report, "all_stopped", "w")) == [
        ("StopGradient", "stopped", _here("# loop: stop all"))
    ]
    assert seen["partly"]["w"] == m.OK
    assert _ends(cut_sources(report, "partly", "w")) == [
        ("StopGradient", "stopped", _here("# loop: stop part"))
    ]
    assert ("StopGradient", "stopped", _here("# for: stop v")) in _ends(
        cut_sources(report, "autograph_for", "v")
    )


def test_bodies_cond_and_case_branches_predicate_never_cut(cases: ModuleType) -> None:
    report, fresh = _run(cases, "conditionals")
    agrees(report, fresh["losses"], fresh["variables"])
    for loss in ("cond", "case", "python_if"):
        for variable in ("w", "v"):
            ops = [op for op, _, _ in cut_sources(report, loss, variable)]
            assert not {"Less", "Greater", "Cast", "ArgMax"} & set(ops), (loss, variable, ops)
    assert ("StopGradient", "stopped", _here("# cond: stop taken")) in _ends(
        cut_sources(report, "cond", "w")
    )
    assert ("StopGradient", "stopped", _here("# case")) in _ends(cut_sources(report, "case", "w"))
    # v only chooses the branch of `cond`: no data path
    assert report.loss("cond").pair("v").status == m.DISCONNECTED


def test_bodies_custom_gradient_none_is_named_at_the_grad_fn(cases: ModuleType) -> None:
    report, fresh = _run(cases, "custom_gradients")
    seen = agrees(report, fresh["losses"], fresh["variables"])
    assert seen["clip"]["w"] == m.OK
    assert seen["clip"]["v"] == m.NONDIFFERENTIABLE
    [point] = report.loss("clip").pair("v").cut_points
    assert point.node == "clip_first.grad"
    assert point.source.endswith(_here("def grad(upstream: tf.Tensor) -> Any:"))
    assert seen["log1pexp"] == {"w": m.OK, "v": m.OK}


def test_bodies_integer_chain_names_where_the_gradient_was_lost(cases: ModuleType) -> None:
    report, fresh = _run(cases, "integer_chains")
    seen = agrees(report, fresh["losses"], fresh["variables"])
    assert seen["argmax_cast"]["v"] == m.NONDIFFERENTIABLE
    assert _ends(cut_sources(report, "argmax_cast", "v")) == [
        ("ArgMax", "nondifferentiable", _here("# chain: argmax"))
    ]
    assert _ends(cut_sources(report, "round_casts", "v")) == [
        ("Round", "nondifferentiable", _here("# chain: round"))
    ]
    assert _ends(cut_sources(report, "accuracy", "v")) == [
        ("ArgMax", "nondifferentiable", _here("# chain: accuracy"))
    ]
