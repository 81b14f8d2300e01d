"""The fix decision as a pure function of plain evidence: each pattern told apart from its
neighbours, candidates where the evidence singles out none, and every report's problems
fixed. (``test_fixes_proven.py`` proves the fixes on real programs with bare TensorFlow.)"""

from __future__ import annotations

import pytest

from gradscope._src.analysis import fixes
from gradscope._src.analysis.fixes import Context, fix_for
from gradscope._src.results import causes
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.facts import CutPoint, NanOrigin
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import Status
from tests import checks


def cut(op: str, kind: str = "nondifferentiable", source: str = "train.py:12",
        node: str = "", later: tuple[str, ...] = ()) -> CutPoint:  # fmt: skip
    return CutPoint(node or op, op, kind, source, later)


@pytest.mark.parametrize(
    "op, kind",
    [("ArgMax", "soft-argmax"), ("ArgMin", "soft-argmax"), ("Round", "straight-through"),
     ("Floor", "straight-through"), ("Cast", "straight-through"),
     ("Greater", "soft-comparison"), ("Equal", "soft-comparison"),
     ("Unique", "no-gradient-op")],
)  # fmt: skip
def test_fix_each_nondifferentiable_op_gets_its_own_kind_at_the_cut(op: str, kind: str) -> None:
    fix = fix_for(Context("none:nondifferentiable", "w", (cut(op),)))
    assert fix is not None and fix.kind == kind and fix.where == "train.py:12"
    assert "train.py:12" in fix.text
    assert bool(fix.candidates) == (kind == "no-gradient-op")  # only an unknown op: candidates


def test_fix_argmax_names_the_later_casts_too() -> None:
    later = ("Cast at train.py:15",)
    fix = fix_for(Context("none:nondifferentiable", "w", (cut("ArgMax", later=later),)))
    assert fix is not None and fix.later == later and "Cast at train.py:15" in fix.text


def test_fix_round_gives_the_straight_through_code() -> None:
    fix = fix_for(Context("none:nondifferentiable", "w", (cut("Round"),)))
    assert fix is not None and "x + tf.stop_gradient(tf.round(x) - x)" in fix.text


def test_fix_stop_gradient_is_removed_unless_a_target_network_or_straight_through() -> None:
    stop = cut("StopGradient", "stopped")
    plain = fix_for(Context("none:stopped", "output1", (stop,)))
    target = fix_for(Context("none:stopped", "target_net/dense/kernel", (stop,)))
    flowing = fix_for(Context("ok", "w", (stop,)))
    assert plain is not None and plain.kind == "remove-stop-gradient" and not plain.intended
    assert target is not None and target.intended
    assert flowing is not None and flowing.intended and "straight-through" in flowing.text


def test_fix_stop_gradients_argument_is_not_a_stop_gradient_op() -> None:
    fix = fix_for(Context("none:stopped", "w", (cut("MatMul", "stopped", node="h"),)))
    assert fix is not None and fix.kind == "stop-gradients-argument"


def test_fix_assign_and_custom_gradient() -> None:
    assign = fix_for(Context("none:assign", "patch", (cut("AssignVariableOp", "assign"),)))
    custom = fix_for(Context("none:nondifferentiable", "w",
                              (cut("Identity", node="scale.grad_fn"),)))  # fmt: skip
    sliced = fix_for(Context("none:assign", "patch",
                             (cut("ResourceStridedSliceAssign", "assign"),)))  # fmt: skip
    # a whole variable written (a hypernetwork's w.assign(w_pred)): use the tensor itself;
    # a slice written: the same values as a tensor, padded
    assert assign is not None and assign.kind == "assign-as-tensor"
    assert "use that tensor itself in the forward pass" in assign.text
    assert sliced is not None and sliced.kind == "assign-as-tensor" and "tf.pad" in sliced.text
    assert custom is not None and custom.kind == "custom-gradient" and "`scale`" in custom.text


def test_fix_a_cause_said_after_another_gives_the_fix_when_the_first_has_none() -> None:
    said = causes.PathEnds(line="f.py:9", op="AddV2").then(causes.OffPath(model="m"))
    fix = fix_for(Context("none:disconnected", "v", site="f.py:20", cause=said))
    assert fix is not None and fix.kind == "off-path-layer"
    bare = fix_for(Context("none:disconnected", "v", cause=causes.PathEnds(line="f.py:9")))
    assert bare is not None and bare.kind == "unread-variable"  # no path, no cause's fix


def test_fix_trainable_changed_after_compile_is_compile_again() -> None:
    said = causes.SinceCompile(line="train.py:30", api="fit", idle=True)
    fix = fix_for(Context("ok", "d1/kernel", site="train.py:33", cause=said))
    assert fix is not None and fix.kind == "compile-again" and fix.where == "train.py:33"
    assert "compile()` at train.py:30" in fix.text


def test_fix_disconnected_names_who_reaches_it_else_lists_candidates() -> None:
    reached = fix_for(Context("none:disconnected", "task2/w", target="loss `loss1`",
                               site="t.py:9", api="compute_gradients",
                               reached_by=("compute_gradients at t.py:10",)))  # fmt: skip
    alone = fix_for(Context("none:disconnected", "spare"))
    read = fix_for(Context("none:disconnected", "spare", api="GradientTape.gradient",
                            reads=("body", "head")))  # fmt: skip
    assert reached is not None and reached.kind == "var-list"
    assert "compute_gradients at t.py:10" in reached.text and "var_list=[" not in reached.text
    assert alone is not None and alone.kind == "unread-variable" and len(alone.candidates) == 3
    assert read is not None and "[body, head]" in read.candidates[-1]


def test_fix_compute_gradients_without_var_list_passes_the_loss_own_variables() -> None:
    fix = fix_for(Context("none:disconnected", "task2/w", target="the loss made at t.py:5",
                           site="t.py:9", api="compute_gradients",
                           reads=("body/w", "task1/w")))  # fmt: skip
    assert fix is not None and fix.kind == "var-list" and fix.where == "t.py:9"
    assert "`var_list=[body/w, task1/w]`" in fix.text


def test_fix_unexplained_is_candidates_never_one_invented_fix() -> None:
    fix = fix_for(Context("none:unexplained", "w"))
    assert fix is not None and fix.candidates and "singles out no fix" in fix.text


@pytest.mark.parametrize(
    "op, kind",
    [("Sqrt", "double-where"), ("Log", "safe-log"), ("RealDiv", "divide-no-nan"),
     ("Exp", "nan-candidates")],
)  # fmt: skip
def test_fix_nan_at_the_op_where_it_first_appeared(op: str, kind: str) -> None:
    origin = NanOrigin("n", op, "m.py:4", "gradient", "inf")
    fix = fix_for(Context("nan", "w", nan_origin=origin))
    assert fix is not None and (fix.kind, fix.where) == (kind, "m.py:4")


def test_fix_nan_without_an_origin_lists_candidates() -> None:
    fix = fix_for(Context("nan", "w", site="train.py:9"))
    assert fix is not None and fix.kind == "nan-candidates" and fix.candidates


@pytest.mark.parametrize("status", ["ok", "zero", "frozen", "excluded"])
def test_fix_none_where_nothing_is_wrong(status: str) -> None:
    assert fix_for(Context(status, "w")) is None


@pytest.mark.parametrize("kind", ["dead", "vanishing", "exploding"])
def test_fix_findings_name_the_layer_and_the_candidates(kind: str) -> None:
    fix = fixes.finding_fix(kind, "dense_1/kernel", "train.py:40")
    assert fix is not None and fix.kind == kind and "`dense_1`" in fix.text and fix.candidates


def test_fix_finding_none_reads_its_cause() -> None:
    context = Context("none:stopped", "w", (cut("StopGradient", "stopped"),))
    fix = fixes.finding_fix("none", "w", "train.py:40", context)
    assert fix is not None and fix.kind == "remove-stop-gradient"


@pytest.mark.parametrize(
    "values, said",
    [([-1.0], "flips every gradient"), ([2.0], "scales every gradient by 2"),
     ([0.0], "zeroes every gradient"), ([1.0, 2.0], "each element")],
)  # fmt: skip
def test_fix_multiplier_says_what_grad_loss_does(values: list[float], said: str) -> None:
    context = Context("ok", target="loss `gen`", site="g.yaml:9")
    fix = causes.GradientMultiplier(values=tuple(values)).fix(context)
    assert fix is not None and said in fix.text and fix.kind == "gradient-multiplier"
    assert causes.GradientMultiplier(values=(1.0,)).fix(context) is None


def test_fix_every_problem_kind_of_a_report_gets_one() -> None:
    report = checks.every_kind(numeric=True, replicas=True)
    losses = fixes.fixed_losses(report.losses)
    fixed = fixes.fixed_problems(report.problems, losses)
    assert fixed and all(p.fix is not None for p in fixed), [p.kind for p in fixed if not p.fix]
    scale = [p for p in fixed if p.kind == m.REPLICA_LOSS_SCALE]
    assert all(p.fix is not None and p.fix.kind == "compute-average-loss" for p in scale)


def test_fix_run_sources_and_problems_other_call_named() -> None:
    def call(site: str, status: Status) -> rr.CallResult:
        source = rr.SourceResult("task2/w", status, None, (3,), False)
        return rr.CallResult(site, "compute_gradients", "graph", 1, "t.py:5", 1.0, (source,))

    calls = fixes.fixed_calls([call("t.py:9", Status.DISCONNECTED), call("t.py:10", Status.OK)])
    fix = calls[0].sources[0].fix
    assert fix is not None and fix.kind == "var-list" and "t.py:10" in fix.text
    assert calls[1].sources[0].fix is None
    problem = rr.RunProblem.run_problem(
        "t.py:9", 1, "task2/w", m.UNEXPECTED_NONE, "gives no gradient"
    )
    (fixed,) = fixes.fixed_run_problems([problem], calls)
    assert fixed.fix == fix


def test_fix_a_loss_that_makes_a_variable_every_call_builds_it_once() -> None:
    said = causes.VariablePerCall(names=("w",), lines=("m.py:7",))
    loss = m.LossResult("main", 1.0, (), "m.py:9", (str(said),), causes=(said,))
    (fixed,) = fixes.fixed_losses([loss])
    assert fixed.fix is not None and (fixed.fix.kind, fixed.fix.where) == (
        "build-add-weight",
        "m.py:7",
    )
    assert "add_weight" in fixed.fix.text


def test_fix_timeline_findings_carry_one() -> None:
    from gradscope._src.timeline.findings import find

    steps = [{"step": s, "site": "t.py:9", "variables": {
        "dense/kernel": {"status": "ok", "norm": 0.0, "weight_norm": 1.0, "zero_fraction": 1.0},
        "head/kernel": {"status": "none:stopped", "norm": None, "cause": "cut at sg",
                        "cut_points": [{"node": "sg", "op": "StopGradient", "kind": "stopped",
                                        "source": "t.py:7"}]}}} for s in (1, 2, 3)]  # fmt: skip
    found = {f["kind"]: f for f in find(steps)}
    assert found["dead"]["fix"]["kind"] == "dead" and found["dead"]["fix"]["candidates"]
    assert found["none"]["fix"]["kind"] == "remove-stop-gradient"
    assert found["none"]["fix"]["where"] == "t.py:7"


def test_fix_round_trips_through_its_dict() -> None:
    fix = Fix("soft-argmax", "t.py:3", "text", ("a",), ("Cast at t.py:5",))
    assert Fix.from_dict(fix.to_dict()) == fix and Fix.from_dict({"kind": "x"}) is None


@pytest.mark.parametrize("op", ["ArgMax", "Round", "Cast", "Greater", "Unique", "Identity"])
def test_fix_text_holds_no_unfilled_placeholder(op: str) -> None:
    more = (cut("StopGradient", "stopped", "t.py:20"),)
    fix = fix_for(Context("none:nondifferentiable", "w", (cut(op), *more)))
    assert fix is not None and "{" not in fix.text.replace("{x", "")
    assert "t.py:20" in fix.text  # the other cut is named
