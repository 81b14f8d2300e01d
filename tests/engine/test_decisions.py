"""One place decides each answer (issue 13): the edge rule, the cut points, the statuses, on
hand-made graphs and facts (no TensorFlow needed). The engine's imports (no cycle, no
front-end) are import-linter's contracts, checked by tests/test_layout.py."""

from __future__ import annotations

import pytest

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.nan.origin import nan_pairs
from gradscope._src.engine.numeric.check import ok_pairs
from gradscope._src.engine.status import status_of
from gradscope._src.results import report as m
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts, VariableFacts


def _graph() -> flow.Graph:
    """v -> StopGradient -> Mul <- w ; v -> Cast(int) ; Mul -> write."""
    ops = [
        flow.Op("v", "Placeholder", [], [0]),
        flow.Op("w", "Placeholder", [], [1]),
        flow.Op("s", "StopGradient", [0], [2]),
        flow.Op("m", "Mul", [2, 1], [3]),
        flow.Op("c", "Cast", [0], [4]),
        flow.Op("a", "AssignVariableOp", [1, 3], [], write=True),
        flow.Op("r", "Round", [3], [5], no_gradient=True),
    ]
    return flow.Graph(ops, [0, 1, 2, 3, 4, 6], [True, True, True, True, False, True])


@pytest.mark.parametrize(
    ("op", "tensor", "received", "stop_ops", "expected"),
    [
        (2, 0, {2}, set(), flow.STOPPED),  # a stop_gradient
        (3, 1, {3, 1}, set(), None),  # gradient passes
        (3, 1, {3}, set(), flow.NONDIFFERENTIABLE),  # TensorFlow gave the input none
        (3, 1, {3, 1}, {3}, flow.STOPPED),  # the loss's stop_gradients
        (5, 3, {3}, set(), flow.ASSIGN),  # a write
        (4, 0, set(), set(), flow.NONDIFFERENTIABLE),  # a cast to an integer type
        (6, 3, {5, 3}, set(), flow.NONDIFFERENTIABLE),  # an op with no gradient
    ],
)
def test_crossing_is_the_one_edge_rule(
    op: int, tensor: int, received: set[int], stop_ops: set[int], expected: str | None
) -> None:
    graph = _graph()
    assert flow.crossing(graph, op, tensor, received, stop_ops) == expected


def test_crossing_integer_input_points_upstream() -> None:
    graph = _graph()
    graph.ops.append(flow.Op("f", "Cast", [4], [6]))
    graph.producer.append(7)
    graph.differentiable.append(True)
    assert flow.crossing(graph, 7, 4, {6}, set()) == flow.INTEGER


def _facts(pairs: list[PairFacts]) -> RunFacts:
    variables = tuple(VariableFacts(p.variable, (), "float32", True, "") for p in pairs)
    loss = LossFacts("l", 1.0, (), tuple(pairs))
    return RunFacts("t", "2", "CPU:0", variables, (loss,))


def test_second_passes_ask_status_of() -> None:
    """The NaN-origin and numeric passes pick the pairs whose status is ``nan`` and ``ok``,
    including where a field alone would say otherwise (an unmeasured gradient, a pair no
    gradient was asked for, a gradient of zeros)."""
    pairs = [
        PairFacts("ok", True, has_gradient=True, reachable=True, norm=1.0),
        PairFacts("nan", True, has_gradient=True, reachable=True, finite=False),
        PairFacts("zero", True, has_gradient=True, reachable=True, all_zero=True, norm=0.0),
        PairFacts("none", True, reachable=True),
        PairFacts("off", False, has_gradient=True, finite=False),
        PairFacts(
            "unmeasured", True, has_gradient=True, reachable=True, finite=False, measured=False
        ),
    ]
    facts = _facts(pairs)
    assert [status_of(p) for p in pairs] == [m.OK, m.NAN, m.ZERO, m.UNEXPLAINED, m.EXCLUDED,
                                             m.Status.UNKNOWN]  # fmt: skip
    assert nan_pairs(facts) == {"l": ["nan"]}
    assert ok_pairs(facts) == {"l": ["ok"]}
