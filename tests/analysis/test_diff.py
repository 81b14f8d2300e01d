"""The diff of two losses as pure data: reach sets, explanations, cosines, the matrix."""

from __future__ import annotations

import math

import pytest

from gradscope._src.analysis.diff import compare, matrix
from gradscope._src.analysis.diff_words import why_not
from gradscope._src.results import report as m
from gradscope._src.results.diff import BOTH, NEITHER, ONLY_A, ONLY_B, DiffReport
from gradscope._src.results.facts import Comparison, CutPoint, VariableFacts

STOP = CutPoint("frozen", "StopGradient", "stopped", "x.yaml:17")
ROUND = CutPoint("rounded", "Round", "nondifferentiable", "x.yaml:18")
ASSIGN = CutPoint("copy", "AssignVariableOp", "assign", "x.yaml:19")


def _pair(
    variable: str, status: str, norm: float | None = None, cut_points: tuple[CutPoint, ...] = ()
) -> m.PairResult:
    return m.PairResult(variable, status, norm, (2,), False, cut_points)


def _report(losses: dict[str, list[m.PairResult]]) -> m.Report:
    names = [p.variable for p in next(iter(losses.values()))]
    variables = tuple(
        VariableFacts(n, (2,), "float32", n != "frozen_var", f"x.yaml:{i + 5}")
        for i, n in enumerate(names)
    )
    results = tuple(m.LossResult(name, 1.5, tuple(pairs)) for name, pairs in losses.items())
    return m.Report("x.yaml", "x", "2.21.0", "CPU:0", variables, results)


def _two() -> tuple[m.Report, Comparison]:
    report = _report(
        {
            "a": [
                _pair("body", m.OK, 3.0),
                _pair("head_a", m.OK, 1.0),
                _pair("head_b", m.DISCONNECTED),
                _pair("cut", m.OK, 2.0),
                _pair("frozen_var", m.FROZEN),
            ],
            "b": [
                _pair("body", m.OK, 4.0),
                _pair("head_a", m.DISCONNECTED),
                _pair("head_b", m.OK, 1.0),
                _pair("cut", m.STOPPED, cut_points=(STOP,)),
                _pair("frozen_var", m.FROZEN),
            ],
        }
    )
    cmp = Comparison("a", "b", {"body": -6.0}, {"body": 0.25}, {"body": 9.0}, {"body": 16.0})
    return report, cmp


def test_diff_reach_sets_follow_which_loss_gives_a_gradient() -> None:
    diff = compare(*_two())
    assert diff.names(BOTH) == ("body",)
    assert diff.names(ONLY_A) == ("head_a", "cut")
    assert diff.names(ONLY_B) == ("head_b",)
    assert diff.names(NEITHER) == ("frozen_var",)


def test_diff_numbers_of_a_shared_variable() -> None:
    body = compare(*_two()).variable("body")
    assert body.cosine == -6.0 / (3.0 * 4.0)
    assert body.sign_agreement == 0.25
    assert body.norm_ratio == 3.0 / 4.0
    assert body.dot == -6.0


def test_diff_one_sided_reach_names_the_cut_point() -> None:
    cut = compare(*_two()).variable("cut")
    assert (
        cut.explanation == "b reaches cut only through frozen (StopGradient), so b never trains it"
    )
    assert cut.cut_points == (STOP,)
    assert compare(*_two()).variable("head_b").explanation == "no path leads from head_b to a"
    assert compare(*_two()).variable("frozen_var").explanation == "frozen_var is not trainable"


@pytest.mark.parametrize(
    "pair,text",
    [
        (_pair("v", m.STOPPED, cut_points=(STOP,)),
         "L reaches v only through frozen (StopGradient), so L never trains it"),
        (_pair("v", m.NONDIFFERENTIABLE, cut_points=(ROUND,)),
         "L reaches v only through rounded (Round), which has no gradient, so L never trains it"),
        (_pair("v", m.ASSIGN, cut_points=(ASSIGN,)),
         "L sees v only through copy (AssignVariableOp), which copies it into another variable, "
         "so L never trains it"),
        (_pair("v", m.STOPPED, cut_points=(STOP, ROUND)),
         "L reaches v only through frozen (StopGradient) and rounded (Round), "
         "so L never trains it"),
        (_pair("v", m.UNEXPLAINED),
         "TensorFlow gives L no gradient for v, and no cause was found"),
        (_pair("v", m.EXCLUDED), "v is outside L's vars"),
        (_pair("v", m.FROZEN), "v is not trainable"),
        (_pair("v", m.DISCONNECTED), "no path leads from v to L"),
    ],
)  # fmt: skip
def test_diff_why_not_for_every_status_without_gradient(pair: m.PairResult, text: str) -> None:
    assert why_not("v", "L", pair) == text


def test_diff_neither_reaches_merges_both_reasons() -> None:
    report = _report(
        {
            "a": [_pair("x", m.EXCLUDED), _pair("y", m.DISCONNECTED), _pair("z", m.EXCLUDED)],
            "b": [_pair("x", m.EXCLUDED), _pair("y", m.DISCONNECTED), _pair("z", m.STOPPED,
                  cut_points=(STOP,))],
        }
    )  # fmt: skip
    diff = compare(report, Comparison("a", "b"))
    assert diff.variable("x").explanation == "x is outside the vars of both a and b"
    assert diff.variable("y").explanation == "no path leads from y to a or to b"
    assert diff.variable("z").explanation == (
        "z is outside a's vars; "
        "b reaches z only through frozen (StopGradient), so b never trains it"
    )
    assert diff.variable("z").cut_points == (STOP,)
    assert diff.cosine is None
    assert diff.whole_model() == "whole model: no variable is reached by both a and b"


@pytest.mark.parametrize("x", [0.1234567, 3.0, 1e-30, 7.77e12, 2.0 / 3.0, 1e-200])
def test_diff_opposite_gradients_have_cosine_exactly_minus_one(x: float) -> None:
    report = _report({"a": [_pair("v", m.OK, math.sqrt(x))], "b": [_pair("v", m.OK, math.sqrt(x))]})
    diff = compare(report, Comparison("a", "b", {"v": -x}, {"v": 0.0}, {"v": x}, {"v": x}))
    assert diff.variable("v").cosine == -1.0
    assert diff.cosine == -1.0


def test_diff_cosine_is_clamped_and_survives_overflow() -> None:
    report = _report({"a": [_pair("v", m.OK, 1.0)], "b": [_pair("v", m.OK, 1.0)]})
    rounding = Comparison("a", "b", {"v": 1.0 + 1e-15}, {"v": 1.0}, {"v": 1.0}, {"v": 1.0})
    assert compare(report, rounding).variable("v").cosine == 1.0
    huge = Comparison("a", "b", {"v": 1e300}, {"v": 1.0}, {"v": 1e300}, {"v": 1e300})
    assert compare(report, huge).variable("v").cosine == pytest.approx(1.0)


def test_diff_zero_gradient_has_no_cosine_and_ratio_by_side() -> None:
    report = _report({"a": [_pair("v", m.ZERO, 0.0)], "b": [_pair("v", m.OK, 2.0)]})
    zero_a = compare(report, Comparison("a", "b", {"v": 0.0}, {"v": 0.5}, {"v": 0.0}, {"v": 4.0}))
    v = zero_a.variable("v")
    assert (v.reach, v.cosine, v.norm_ratio, v.sign_agreement) == (BOTH, None, 0.0, 0.5)
    assert zero_a.cosine is None
    assert zero_a.whole_model().startswith("whole model: no cosine")
    swapped = _report({"a": [_pair("v", m.OK, 2.0)], "b": [_pair("v", m.ZERO, 0.0)]})
    assert compare(swapped, Comparison("a", "b", {"v": 0.0})).variable("v").norm_ratio is None


def test_diff_nan_is_left_out_of_the_whole_model_cosine() -> None:
    report = _report(
        {
            "a": [_pair("good", m.OK, 1.0), _pair("bad", m.NAN)],
            "b": [_pair("good", m.OK, 1.0), _pair("bad", m.OK, 1.0)],
        }
    )
    nan = float("nan")
    cmp = Comparison("a", "b", {"good": 0.5, "bad": nan}, {"good": 1.0, "bad": nan},
                     {"good": 1.0, "bad": nan}, {"good": 1.0, "bad": 1.0})  # fmt: skip
    diff = compare(report, cmp)
    bad = diff.variable("bad")
    assert (bad.reach, bad.cosine, bad.dot, bad.sign_agreement) == (BOTH, None, None, None)
    assert diff.left_out == ("bad",)
    assert diff.cosine == 0.5
    assert (
        diff.whole_model()
        == "whole model: cosine +0.500 over 1 shared variable; bad left out (NaN)"
    )


def test_diff_whole_model_cosine_concatenates_the_shared_variables() -> None:
    report = _report(
        {"a": [_pair("u", m.OK, 1.0), _pair("v", m.OK, 2.0)],
         "b": [_pair("u", m.OK, 3.0), _pair("v", m.OK, 1.0)]}
    )  # fmt: skip
    cmp = Comparison(
        "a", "b", {"u": 2.0, "v": -1.5}, {}, {"u": 1.0, "v": 4.0}, {"u": 9.0, "v": 1.0}
    )
    diff = compare(report, cmp)
    assert diff.cosine == pytest.approx(0.5 / math.sqrt(5.0 * 10.0))
    assert [v.variable for v in diff.conflicts] == ["v"]


def test_diff_without_float64_squares_uses_the_report_norms() -> None:
    report = _report({"a": [_pair("v", m.OK, 2.0)], "b": [_pair("v", m.OK, 4.0)]})
    diff = compare(report, Comparison("a", "b", {"v": 4.0}, {"v": 1.0}))
    assert diff.variable("v").cosine == 0.5


def test_diff_conflicts_most_negative_first_and_summary() -> None:
    report = _report(
        {"a": [_pair(n, m.OK, 1.0) for n in "xyz"], "b": [_pair(n, m.OK, 1.0) for n in "xyz"]}
    )
    ones = dict.fromkeys("xyz", 1.0)
    diff = compare(report, Comparison("a", "b", {"x": -0.2, "y": 0.3, "z": -0.9}, ones, ones, ones))
    assert [v.variable for v in diff.conflicts] == ["z", "x"]
    assert diff.summary() == "3 variables: 3 shared, 0 only a, 0 only b, 0 neither · 2 conflicts"


def test_diff_to_dict_has_stable_keys() -> None:
    data = compare(*_two()).to_dict()
    assert list(data) == ["loss_a", "loss_b", "cosine", "reach", "conflicts", "left_out",
                          "variables"]  # fmt: skip
    assert list(data["reach"]) == ["both", "only_a", "only_b", "neither"]
    assert data["conflicts"] == ["body"]
    body = data["variables"]["body"]
    assert list(body) == [
        "reach", "status_a", "status_b", "norm_a", "norm_b", "sparse_a", "sparse_b", "cosine",
        "sign_agreement", "norm_ratio", "dot", "explanation", "cut_points",
    ]  # fmt: skip
    assert body["cosine"] == -0.5
    assert data["variables"]["cut"]["cut_points"] == [STOP.to_dict()]
    assert data["variables"]["head_a"]["cosine"] is None


def test_diff_report_json_is_the_inspect_report_plus_a_diff_section() -> None:
    report, cmp = _two()
    data = DiffReport(report, compare(report, cmp)).to_dict()
    assert {k: v for k, v in data.items() if k != "diff"} == report.to_dict()
    assert data["diff"]["loss_a"] == "a"


def _three() -> tuple[m.Report, list[Comparison]]:
    report = _report(
        {
            "a": [_pair("v", m.OK, 1.0), _pair("w", m.DISCONNECTED)],
            "b": [_pair("v", m.OK, 1.0), _pair("w", m.DISCONNECTED)],
            "c": [_pair("v", m.DISCONNECTED), _pair("w", m.OK, 1.0)],
        }
    )
    one = {"v": 1.0}
    cmps = [Comparison("a", "b", {"v": -0.5}, one, one, one), Comparison("a", "c"),
            Comparison("b", "c")]  # fmt: skip
    return report, cmps


def test_matrix_cosines_are_symmetric_with_one_on_the_diagonal() -> None:
    result = matrix(*_three())
    assert result.losses == ("a", "b", "c")
    assert result.cosine("a", "b") == result.cosine("b", "a") == -0.5
    assert result.cosine("a", "c") is None
    assert result.cosine("c", "c") == 1.0
    assert [(d.loss_a, d.loss_b) for d in result.conflicts] == [("a", "b")]
    assert result.summary() == "3 losses, 3 pairs: 1 in conflict, 2 with no cosine"


def test_matrix_to_dict() -> None:
    data = matrix(*_three()).to_dict()
    assert list(data) == ["gradscope", "spec", "name", "tensorflow", "device", "losses", "matrix",
                          "conflicts", "pairs"]  # fmt: skip
    assert data["matrix"]["b"] == {"a": -0.5, "b": 1.0, "c": None}
    assert data["conflicts"] == [{"loss_a": "a", "loss_b": "b", "cosine": -0.5}]
    assert [(p["loss_a"], p["loss_b"]) for p in data["pairs"]] == [("a", "b"), ("a", "c"),
                                                                     ("b", "c")]  # fmt: skip
