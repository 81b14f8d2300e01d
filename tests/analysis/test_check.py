"""The check policy and ``CheckResult``: plain data first, then real specs held to bare TF."""

from __future__ import annotations

import pytest

from gradscope._src.analysis.check import check_reports, expectations_of
from gradscope._src.analysis.policy import find_problems
from gradscope._src.errors import ExitCode, SpecErrors, UsageError
from gradscope._src.results import report as m
from gradscope._src.results.check import CheckResult
from tests import checks
from tests.checks import CUT, SPEC, clean, every_kind, expectation, pair, report, variable


def _problem(r: m.Report, kind: str) -> m.Problem:
    (found,) = [p for p in r.problems if p.kind == kind]
    return found


def _one_loss(status: str, expect: list, norm: float | None = 1.0):
    losses = [m.LossResult("l", 1.0, (pair("v", status, norm),), f"{SPEC}:20")]
    return report(losses, [variable("v", 5, trainable=status != m.FROZEN)], expect)


def _kinds(r: m.Report) -> list[str]:
    """The kinds of the pair problems (never-trained left out)."""
    return [p.kind for p in r.problems if p.loss is not None]


# --- the policy, on plain data ----------------------------------------------------------------


def test_check_policy_finds_every_kind_once() -> None:
    r = every_kind()
    assert [(p.loss, p.variable, p.kind) for p in r.problems] == [
        ("loss_1", "task1/w", m.UNEXPECTED_NONE),
        ("loss_1", "task2/w", m.UNEXPECTED_CONNECTED),
        ("loss_2", "body/w", m.NAN_PROBLEM),
        (None, "spare", m.NEVER_TRAINED),
    ]


def test_check_policy_unexpected_none_message_names_variable_loss_and_cut() -> None:
    p = _problem(every_kind(), m.UNEXPECTED_NONE)
    assert p.message == (
        "`task1/w` gets no gradient from `loss_1`: every path is cut at `frozen` "
        "(StopGradient), configs/x.yaml:17, but expect.loss_1.connected lists `task1/*`"
    )
    assert p.cut_points == (CUT,)
    assert p.line == 41  # the line of the `connected` pattern it contradicts


def test_check_policy_lines_point_at_pattern_or_variable() -> None:
    r = every_kind()
    assert _problem(r, m.UNEXPECTED_CONNECTED).line == 40  # the `none` pattern
    assert _problem(r, m.NAN_PROBLEM).line == 8  # the variable
    assert _problem(r, m.NEVER_TRAINED).line == 11  # the variable


@pytest.mark.parametrize(
    "status", [m.ZERO, m.DISCONNECTED, m.STOPPED, m.UNEXPLAINED, m.EXCLUDED, m.FROZEN]
)
def test_check_policy_connected_wants_a_usable_gradient(status: str) -> None:
    r = _one_loss(status, [expectation("l", connected=["v"])], norm=0.0)
    assert _kinds(r) == [m.UNEXPECTED_NONE]


def test_check_policy_zero_under_connected_says_all_zero() -> None:
    r = _one_loss(m.ZERO, [expectation("l", connected=["v"])], norm=0.0)
    assert "`v` gets an all-zero gradient from `l`, which trains nothing" in r.problems[0].message


def test_check_policy_excluded_under_connected_says_why() -> None:
    r = _one_loss(m.EXCLUDED, [expectation("l", connected=["v"])], norm=None)
    assert "outside the loss's `vars`" in r.problems[0].message


@pytest.mark.parametrize("status", [m.OK, m.ZERO])
def test_check_policy_none_refuses_any_gradient(status: str) -> None:
    r = _one_loss(status, [expectation("l", none=["v"])], norm=0.0 if status == m.ZERO else 1.0)
    assert [p.kind for p in r.problems] == [m.UNEXPECTED_CONNECTED]


@pytest.mark.parametrize("status", [m.DISCONNECTED, m.STOPPED, m.ASSIGN, m.EXCLUDED, m.FROZEN])
def test_check_policy_none_is_met_without_a_gradient(status: str) -> None:
    r = _one_loss(status, [expectation("l", none=["v"])], norm=None)
    assert r.problems == ()


def test_check_policy_nan_fails_whatever_expect_says() -> None:
    for expect in ([], [expectation("l", none=["v"])], [expectation("l", connected=["v"])]):
        r = _one_loss(m.NAN, expect, norm=None)
        assert [p.kind for p in r.problems] == [m.NAN_PROBLEM]


def test_check_policy_none_wins_over_connected() -> None:
    ok = _one_loss(m.DISCONNECTED, [expectation("l", none=["v"], connected=["*"])], norm=None)
    assert ok.problems == ()
    bad = _one_loss(m.OK, [expectation("l", none=["v"], connected=["*"])])
    assert [p.kind for p in bad.problems] == [m.UNEXPECTED_CONNECTED]


def test_check_policy_never_trained_is_silenced_by_a_none_pattern() -> None:
    assert [p.kind for p in _one_loss(m.DISCONNECTED, [], norm=None).problems] == [m.NEVER_TRAINED]
    assert _one_loss(m.DISCONNECTED, [expectation("l", none=["v"])], norm=None).problems == ()


def test_check_policy_never_trained_skips_frozen_and_names_exclusion() -> None:
    assert _one_loss(m.FROZEN, [], norm=None).problems == ()
    (p,) = _one_loss(m.EXCLUDED, [], norm=None).problems
    assert p.kind == m.NEVER_TRAINED and "outside every loss's `vars`" in p.message


def test_check_policy_zero_everywhere_is_not_never_trained() -> None:
    # A zero gradient is a gradient: the path exists, the variable is not detached.
    assert _one_loss(m.ZERO, [], norm=0.0).problems == ()


# --- CheckResult ------------------------------------------------------------------------------


def test_check_result_exit_codes() -> None:
    assert check_reports([clean()]).exit_code is ExitCode.OK
    failing = check_reports([clean(), every_kind()])
    assert not failing.passed and failing.exit_code is ExitCode.PROBLEMS
    assert int(failing.exit_code) == 1
    everything_known = checks.result(every_kind(), known=4)
    assert everything_known.passed and everything_known.exit_code is ExitCode.OK


def test_check_result_one_spec_is_the_inspect_report_plus_keys() -> None:
    r = every_kind()
    data = check_reports([r]).to_dict()
    inspect_shape = r.to_dict()
    assert {k: data[k] for k in inspect_shape} == inspect_shape
    assert set(data) - set(inspect_shape) == {"check", "known_problems"}
    assert data["check"]["passed"] is False and data["check"]["exit_code"] == 1
    assert [p["kind"] for p in data["problems"]] == [p.kind for p in r.problems]


def test_check_result_known_problems_leave_problems() -> None:
    data = checks.result(every_kind(), known=1).to_dict()
    assert [p["kind"] for p in data["known_problems"]] == [m.UNEXPECTED_NONE]
    assert data["known_problems"][0]["known"] is True
    assert m.UNEXPECTED_NONE not in [p["kind"] for p in data["problems"]]
    assert data["check"]["known"] == 1 and data["check"]["problems"] == 3


def test_check_result_several_specs_combine() -> None:
    result = checks.result(every_kind(), clean(), known=1)
    data = result.to_dict()
    assert data["specs"] == [SPEC, checks.OTHER]
    assert [r["spec"] for r in data["reports"]] == [SPEC, checks.OTHER]
    assert all("check" not in r for r in data["reports"])
    assert {p["spec"] for p in data["problems"]} == {SPEC}
    assert len(data["problems"]) == 3 and len(data["known_problems"]) == 1
    assert data["check"]["specs"] == 2 and data["check"]["pairs"] == 9
    assert result.verdict() == "failed: 3 new problems in 1 of 2 specs, 1 known"


def test_check_result_verdict_when_passing() -> None:
    assert check_reports([clean()]).verdict() == (
        "passed: 1 spec, 1 pairs, no unexpected gradients"
    )


def _with_expect(r: m.Report, expect: dict) -> list[m.Problem]:
    """The problems of ``r`` under ``expect`` given in Python, as ``pipeline.assemble`` finds
    them for ``check(expect=...)``."""
    given = expectations_of(expect, r.spec, {loss.name: loss.source for loss in r.losses})
    return find_problems(r.spec, r.losses, r.variables, given)


def test_check_expect_override_replaces_the_spec_expect() -> None:
    r = every_kind()
    redone = _with_expect(r, {"loss_1": {"none": "task2/*", "connected": ["task1/*"]}})
    assert [p.kind for p in redone] == [p.kind for p in r.problems]
    quiet = _with_expect(r, {"loss_1": {"none": ["task2/*", "spare"]}})
    assert [p.kind for p in quiet] == [m.UNEXPECTED_CONNECTED, m.NAN_PROBLEM]
    assert quiet[0].line == 30  # the loss's line: the pattern is not in the spec


@pytest.mark.parametrize(
    "expect,message",
    [
        ({"nope": {"none": ["x"]}}, "has no loss 'nope'"),
        ({"loss_1": {"nonee": ["x"]}}, "unknown field 'nonee'"),
        ({"loss_1": {"none": [3]}}, "expected glob strings, saw 3"),
    ],
)
def test_check_expect_override_rejects_mistakes(expect: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        r = every_kind()
        expectations_of(expect, r.spec, {loss.name: loss.source for loss in r.losses})


# --- real specs: gradients from bare TensorFlow -----------------------------------------------

HEAD = """\
gradscope: 1
inputs:
  x: {shape: [8, 4]}
variables:
  body/w:  {shape: [4, 16], init: glorot_uniform}
  task1/w: {shape: [16, 3], init: glorot_uniform}
  task2/w: {shape: [16, 3], init: glorot_uniform}
nodes:
  - {name: body, op: matmul, inputs: [x, body/w]}
  - {name: t1, op: matmul, inputs: [body, task1/w]}
  - {name: t1_frozen, op: stop_gradient, inputs: [t1]}
  - {name: t2, op: matmul, inputs: [body, task2/w]}
  - {name: loss1, op: reduce_mean, inputs: [t1_frozen]}
  - {name: loss2, op: reduce_mean, inputs: [t2]}
losses:
  loss_1: loss1
  loss_2: loss2
expect:
  loss_1:
    connected: ["task1/*"]
"""


@pytest.fixture
def spec_file(write_spec):
    from gradscope._src.frontends.yaml import load_spec

    def make(text: str, name: str = "spec.yaml"):
        path = write_spec(text, name)
        return path, load_spec(path)

    return make


@pytest.mark.tf
def test_check_detached_head_fails_naming_variable_loss_and_cut(spec_file) -> None:
    import gradscope
    from tests.reference import reference

    path, spec = spec_file(HEAD)
    assert reference(spec)["loss_1"]["task1/w"].none  # bare TF: no gradient
    result = gradscope.check(path)
    assert result.exit_code is ExitCode.PROBLEMS
    by_key = {(p.loss, p.variable, p.kind): p for p in result.failures}
    p = by_key["loss_1", "task1/w", m.UNEXPECTED_NONE]
    assert p.message == (
        f"`task1/w` gets no gradient from `loss_1`: every path is cut at `t1_frozen` "
        f"(StopGradient), {path}:11, but expect.loss_1.connected lists `task1/*`"
    )
    assert p.line == 20
    # task1/w trains through no loss at all, but one variable is one problem (issue 29): the
    # contradicted expectation says it; no second never-trained problem for it
    assert [k for k in by_key if k[1] == "task1/w"] == [("loss_1", "task1/w", m.UNEXPECTED_NONE)]


@pytest.mark.tf
def test_check_unexpected_connected_from_bare_tf(spec_file) -> None:
    import gradscope
    from tests.reference import reference

    text = HEAD.replace('connected: ["task1/*"]', 'none: ["body/*", "task1/*"]')
    path, spec = spec_file(text)
    ref = reference(spec)
    assert not ref["loss_2"]["body/w"].none and ref["loss_1"]["body/w"].none
    result = gradscope.check(path, expect={"loss_2": {"none": ["body/*"]}})
    (p,) = [p for p in result.failures if p.kind == m.UNEXPECTED_CONNECTED]
    assert (p.loss, p.variable) == ("loss_2", "body/w")
    assert f"(norm {ref['loss_2']['body/w'].norm:.3g})" in p.message


NAN_AND_ZERO = """\
gradscope: 1
variables:
  v: {values: [0.0, 4.0]}
  w: {values: [1.0, 2.0]}
  spare: {shape: [2]}
nodes:
  - {name: root, op: sqrt, inputs: [v]}
  - {name: sum_root, op: reduce_sum, inputs: [root]}
  - {name: negative, op: multiply, inputs: [w, -1.0]}
  - {name: dead, op: relu, inputs: [negative]}
  - {name: sum_dead, op: reduce_sum, inputs: [dead]}
losses:
  root: sum_root
  dead: sum_dead
expect:
  dead:
    connected: [w]
"""


@pytest.mark.tf
def test_check_nan_zero_and_never_trained_from_bare_tf(spec_file) -> None:
    import gradscope
    from tests.reference import reference

    path, spec = spec_file(NAN_AND_ZERO)
    ref = reference(spec)
    assert not ref["root"]["v"].finite  # d sqrt(v)/dv is infinite at 0
    assert ref["dead"]["w"].zero  # a dead ReLU
    assert all(ref[loss]["spare"].none for loss in ref)
    result = gradscope.check(path)
    kinds = {(p.loss, p.variable): p.kind for p in result.failures}
    assert kinds == {
        ("root", "v"): m.NAN_PROBLEM,
        ("dead", "w"): m.UNEXPECTED_NONE,
        (None, "spare"): m.NEVER_TRAINED,
    }
    assert result.exit_code is ExitCode.PROBLEMS


@pytest.mark.tf
def test_check_several_specs_give_one_result(spec_file) -> None:
    import gradscope

    bad, _ = spec_file(HEAD, "bad.yaml")
    result = gradscope.check(["configs/multitask.yaml", bad, "configs/stop-gradient.yaml"])
    assert isinstance(result, CheckResult)
    assert [r.spec for r in result.reports] == ["configs/multitask.yaml", bad,
                                               "configs/stop-gradient.yaml"]  # fmt: skip
    assert {p.spec for p in result.failures} == {bad}
    assert result.to_dict()["check"]["specs"] == 3


@pytest.mark.tf
def test_check_bad_specs_raise_every_error_and_no_result(write_spec) -> None:
    import gradscope

    good = write_spec(HEAD, "good.yaml")
    a = write_spec(HEAD.replace("inputs: [x, body/w]", "inputs: [x, nope]"), "a.yaml")
    b = write_spec(HEAD.replace("gradscope: 1", "gradscope: 7"), "b.yaml")
    with pytest.raises(SpecErrors) as info:
        gradscope.check([a, good, b])
    lines = info.value.lines()
    assert any(line.startswith(f"{a}:9:") and "nope" in line for line in lines), lines
    assert any(line.startswith(f"{b}:1:") for line in lines), lines


def test_check_errors_of_several_targets_are_one_error() -> None:
    from gradscope._src.api import _combined
    from gradscope._src.errors import ErrorGroup, SpecError, TargetError
    from gradscope._src.location import Location

    a = SpecError(Location("a.yaml", 3, 5), "nodes[0]", "bad")
    b = SpecErrors([SpecError(Location("b.yaml", 1, 1), "gradscope", "worse")])
    merged = _combined([a, b])
    assert isinstance(merged, SpecErrors)
    assert merged.lines() == ["a.yaml:3:5: nodes[0]: bad", "b.yaml:1:1: gradscope: worse"]
    mixed = _combined([a, TargetError("pkg.mod:build: no such module")])
    assert isinstance(mixed, ErrorGroup) and mixed.exit_code is ExitCode.USAGE
    assert mixed.lines() == ["a.yaml:3:5: nodes[0]: bad", "pkg.mod:build: no such module"]
