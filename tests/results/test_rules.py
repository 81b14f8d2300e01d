"""The one status rule and the one exit-code rule, asked by every door: on hand-made facts,
no TensorFlow. Expected statuses are contract section 2's table, expected codes its exit codes
(and a shell's 128 + N for a signal); the facts of a gradient come from numpy."""

from __future__ import annotations

import itertools
import signal

import numpy as np
import pytest

from gradscope._src.engine.status import status_of
from gradscope._src.results import check, exits, run
from gradscope._src.results import report as m
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.facts import PairFacts, VariableFacts
from gradscope._src.results.status import decide
from gradscope._src.results.summary import Summary
from gradscope._src.timeline.findings import find
from gradscope._src.timeline.record import NONE_STATUS, gradient_stats
from gradscope._src.watch.run import Outcome, exit_code

#: (facts, the contract's status for them): one row per line of section 2's table
TABLE = [
    ({"has_gradient": True}, "ok"),
    ({"has_gradient": True, "all_zero": True}, "zero"),
    ({"has_gradient": True, "finite": False}, "nan"),
    ({"has_gradient": False, "reachable": False}, "none:disconnected"),
    ({"has_gradient": False, "cut_points": ["stopped"]}, "none:stopped"),
    ({"has_gradient": False, "cut_points": ["assign"]}, "none:assign"),
    ({"has_gradient": False, "cut_points": ["nondifferentiable"]}, "none:nondifferentiable"),
    ({"has_gradient": False}, "none:unexplained"),
    ({"has_gradient": False, "requested": False, "trainable": True}, "excluded"),
    ({"has_gradient": False, "requested": False, "trainable": False}, "frozen"),
    ({"has_gradient": True, "measured": False}, "unknown"),  # run: never computed
]


@pytest.mark.parametrize(("facts", "expected"), TABLE)
def test_the_status_rule_is_the_contract_table(facts: dict[str, object], expected: str) -> None:
    assert decide(**facts) == expected  # type: ignore[arg-type]
    # the engine's door (spec, target, watched call) gives the same from its facts
    kinds: list[str] = facts.get("cut_points", [])  # type: ignore[assignment]
    cuts = tuple(CutPoint("n", "Op", k, "t.py:1") for k in kinds)
    pair = PairFacts(
        "w", bool(facts.get("requested", True)), bool(facts["has_gradient"]),
        reachable=bool(facts.get("reachable", True)), finite=bool(facts.get("finite", True)),
        all_zero=bool(facts.get("all_zero", False)), cut_points=cuts,
        measured=bool(facts.get("measured", True)),
    )  # fmt: skip
    variable = VariableFacts("w", (2,), "float32", bool(facts.get("trainable", True)), "t.py:1")
    assert status_of(pair, variable) == expected


def test_mixed_cuts_take_the_first_of_stopped_assign_nondifferentiable() -> None:
    order = ["stopped", "assign", "nondifferentiable"]
    for n in (1, 2, 3):
        for kinds in itertools.permutations(order, n):
            first = min(kinds, key=order.index)
            assert decide(has_gradient=False, cut_points=kinds) == f"none:{first}", kinds


#: gradients as numpy makes them, and the contract's status for each
ARRAYS = [
    (np.array([1.0, -2.0], np.float32), "ok"),
    (np.zeros((2, 3), np.float32), "zero"),
    (np.zeros((0,), np.float32), "zero"),  # an empty gradient is all zero
    (np.array([1.0, np.nan], np.float32), "nan"),
    (np.array([np.inf, 0.0], np.float64), "nan"),
    (np.array([3e38, 3e38], np.float32), "ok"),  # finite, though its float32 norm overflows
]


@pytest.mark.parametrize(("gradient", "expected"), ARRAYS)
def test_a_timeline_record_asks_the_same_rule(gradient: np.ndarray, expected: str) -> None:
    """The Monitor's and ``run --timeline``'s records (``timeline/record.py``) get the status
    the engine gives the same gradient: finite and all zero read by numpy here."""
    finite = bool(np.isfinite(gradient).all())
    zero = finite and not np.any(gradient)
    assert gradient_stats(gradient)["status"] == expected
    pair = PairFacts("w", True, True, reachable=True, finite=finite, all_zero=zero)
    assert status_of(pair) == expected
    # a Monitor's summary of the same gradient (its norm, its zero count)
    square_sum = float(np.sum(np.square(gradient.astype(np.float64))))
    zeros = int(gradient.size - np.count_nonzero(gradient))
    summary = Summary(square_sum, zeros, gradient.shape)
    assert gradient_stats(summary)["status"] == expected


def test_a_none_gradient_with_nothing_known_is_unexplained_everywhere() -> None:
    assert NONE_STATUS == gradient_stats(None)["status"] == "none:unexplained"
    assert status_of(PairFacts("w", True, False, reachable=True)) == NONE_STATUS
    # a timeline's none finding whose records hold no status of their own gets its fix as a
    # none:unexplained source's (the rule's status for a None with nothing known)
    steps = [{"step": s, "site": "t.py:3",
              "variables": {"w": {"status": "none:unexplained", "norm": None}}}
             for s in (1, 2, 3)]  # fmt: skip
    (found,) = find(steps)
    assert (found["kind"], found["variable"]) == ("none", "w")


#: (failures, outcome, signal, unwritten) -> the contract's exit code
EXITS = [
    ((0, "finished", None, False), 0),
    ((0, "stopped", None, False), 0),
    ((0, "replaced", None, False), 0),
    ((2, "finished", None, False), 1),
    ((0, "raised", None, False), 4),
    ((3, "raised", None, False), 4),  # the program's failure says more than its gradients
    ((0, "exited", None, False), 4),  # a program's own sys.exit(1) is never gradscope's 1
    ((1, "interrupted", None, False), 130),
    ((0, "interrupted", "SIGTERM", False), 128 + signal.SIGTERM),
    ((0, "interrupted", "SIGHUP", False), 128 + signal.SIGHUP),
    ((1, "raised", None, True), 2),  # an output it could not write
]


@pytest.mark.parametrize(("given", "expected"), EXITS)
def test_every_door_asks_the_one_exit_code_rule(
    given: tuple[int, str, str | None, bool], expected: int
) -> None:
    failures, outcome, sig, unwritten = given
    assert exits.exit_code(failures, outcome, sig, unwritten) == expected
    problems = tuple(
        run.RunProblem.run_problem("t.py:3", 1, f"w{i}", "unexpected-none", "w: none")
        for i in range(failures)
    )
    report = run.RunReport("t.py", ("t.py",), "2", "CPU:0", (), problems, outcome, signal=sig)
    # gradscope run / gradscope.run() / watch(): the report's code (what the program did),
    # then run's door, which also knows what it could not write
    if not unwritten:
        assert report.exit_code == expected
    unwritten_said = ("cannot write --timeline t.json: disk full",) if unwritten else ()
    assert exit_code(Outcome(report, None, unwritten_said)) == expected


@pytest.mark.parametrize(("failures", "known"), [(0, 0), (0, 2), (1, 0), (2, 1)])
def test_check_and_the_pytest_plugin_ask_the_same_rule(failures: int, known: int) -> None:
    """``check`` (and ``assert_gradients``, ``check --timeline``) fails on the problems no
    baseline holds; ``pytest --gradscope`` fails a test as ``run`` exits 1 (``exits.passed``)."""
    problems = tuple(
        m.Problem.problem(
            "loss", f"w{i}", "unexpected-none", "w: none", spec="s.yaml", line=3, known=i < known
        )
        for i in range(failures + known)
    )
    report = m.Report("s.yaml", "s", "2", "CPU:0", (), (), problems)
    result = check.CheckResult((report,))
    assert int(result.exit_code) == (1 if failures else 0)
    assert result.passed is (failures == 0) is exits.passed(failures)
