"""The registry of causes (results/causes.py): each cause a class with its id, status, SARIF
rule and help, worded and fixed from its facts alone, never from a sentence read back; the
files made from it (the schemas' fix kinds, the causes page) are current. No TensorFlow."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gradscope._src.analysis.fixes import Context, fix_for
from gradscope._src.printable import shown
from gradscope._src.results import causes
from gradscope._src.results.causes import CAUSES, Cause
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.status import Status

ROOT = Path(__file__).resolve().parents[2]


def test_causes_each_have_an_id_status_rule_title_and_help() -> None:
    statuses = {str(s) for s in Status}
    rules = [cls.rule for cls in CAUSES.values()]
    assert len(set(rules)) == len(rules)  # one SARIF rule name per cause
    for cause_id, cls in CAUSES.items():
        assert cls.id == cause_id and cause_id == cause_id.lower()
        assert cls.status in statuses, cause_id
        assert cls.rule[:1].isupper() and " " not in cls.rule, cause_id
        assert cls.title and cls.help.endswith((".", ")")), cause_id


def test_causes_fix_kinds_are_the_registry_s() -> None:
    kinds = causes.fix_kinds()
    assert len(kinds) == len(set(kinds))
    assert {"straight-through", "move-into-tape", "build-add-weight", "intended"} <= set(kinds)


@pytest.mark.parametrize("cause_id", list(CAUSES))
def test_cause_round_trips_through_its_dict(cause_id: str) -> None:
    cls = CAUSES[cause_id]
    made = cls(line="t.py:3", op="Op", names=("a", "b"))
    back = causes.from_dict(json.loads(json.dumps(made.to_dict())))
    assert back == made and str(back) == str(made)


def test_causes_are_worded_from_their_facts() -> None:
    assert str(causes.OutsideTape(line="t.py:4", op="MatMul")) == (
        "used only through t.py:4 (MatMul), run while the tape was not recording"
    )
    assert str(causes.Filled()) == (
        "no gradient flows; TensorFlow filled zeros (unconnected_gradients=ZERO)"
    )
    watched = causes.Filled(also=(causes.UnwatchedTensor(),))
    assert str(watched).startswith("no gradient flows: never watched: a tensor")
    ends = causes.OffPath(model="m").then(causes.PathEnds(line="t.py:9", op="Mean"))
    assert str(ends).endswith("; its last path ends at t.py:9 (Mean)")
    assert causes.multiplied(Status.OK, (1.0,), "t.py:3") is None
    assert str(causes.multiplied(Status.ZERO, (0.0,), "t.py:3")) == (
        "zeroed by output_gradients=0 at t.py:3: every gradient of this call is 0"
    )
    assert str(causes.multiplied(Status.OK, (-1.0, 2.0), "t.py:3")).startswith(
        "flipped where its weight is negative by output_gradients=-1, 2 at t.py:3"
    )
    assert str(causes.ChangedAfterTrace(line="t.py:7", trained=True)).startswith(
        "frozen after the train step was traced at t.py:7"
    )
    unread = causes.UnreadOutput(names=("aux",), model="net", line="t.py:5")
    assert (
        str(unread)
        == "reaches only output 'aux' of model 'net', which the loss made at t.py:5 does not read"
    )


def test_causes_hold_names_as_they_are_and_shown_escapes_them() -> None:
    said = causes.UnreadOutput(names=("a\nb",), model="m\x1b[31m")
    assert "'a\nb'" in str(said) and said.to_dict()["names"] == ["a\nb"]  # JSON: faithful
    seen = shown(said)  # what every line-based format draws
    assert "\n" not in str(seen) and "\x1b" not in str(seen) and "a\\nb" in str(seen)


#: A cause of every kind a front-end detects, with the fix kind and line it must give.
DETECTED = [
    (causes.OutsideTape(line="gan.py:7", op="BiasAdd"), "move-into-tape", "gan.py:7"),
    (causes.LeftTensorFlow(line="f.py:6", how=".numpy()"), "keep-tensorflow-ops", "f.py:6"),
    (causes.UnwatchedVariable(), "watch", "f.py:20"),
    (causes.UnwatchedTensor(), "watch", "f.py:20"),
    (causes.UnreadOutput(names=("b",), compiled=True), "unread-output", "f.py:20"),
    (causes.OffPath(model="m"), "off-path-layer", "f.py:20"),
    (causes.NoVarList(api="compute_gradients", names=("body",)), "var-list", "f.py:20"),
    (causes.ChangedAfterTrace(line="f.py:3", trained=True), "compile-again", "f.py:20"),
    (causes.Untraceable(how="numpy", line="f.py:4", said="x"), "keep-tensorflow-ops", "f.py:4"),
]


@pytest.mark.parametrize(("cause", "kind", "where"), DETECTED, ids=[c.id for c, _, _ in DETECTED])
def test_cause_gives_its_fix_from_its_facts_not_its_words(
    cause: Cause, kind: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix is the same with every cause's words gone: nothing reads a message back."""
    context = Context("none:disconnected", "v", site="f.py:20", api="compute_gradients",
                      cause=cause)  # fmt: skip
    fix = fix_for(context)
    assert fix is not None and (fix.kind, fix.where) == (kind, where)
    for cls in CAUSES.values():
        monkeypatch.setattr(cls, "message", lambda self: "")
    monkeypatch.setattr(Cause, "__str__", lambda self: "")
    assert fix_for(context) == fix


def test_cause_of_a_cut_point_is_found_by_its_op_or_the_engine_s_id() -> None:
    def of(op: str, kind: str = "nondifferentiable", cause: str = "") -> str:
        return causes.of_cut(CutPoint("n", op, kind, "t.py:3", cause=cause)).id

    assert of("ArgMax") == "argmax" and of("Cast") == "rounding" and of("Less") == "comparison"
    assert of("StopGradient", "stopped") == "stop-gradient"
    assert of("MatMul", "stopped") == "stop-gradients-argument"
    assert of("AssignVariableOp", "assign") == "assign" and of("Unique") == "no-gradient-op"
    assert of("FusedBatchNormV3") == "none-input" and of("Identity") == "custom-gradient"


def test_causes_every_fact_is_plain_data() -> None:
    """Facts a JAX front-end can give as well: strings, numbers, flags, names, cut points."""
    for cls in CAUSES.values():
        for f in dataclasses.fields(cls):
            assert str(f.type).split("[")[0] in ("str", "bool", "int", "float", "tuple"), (
                f"{cls.id}.{f.name}: {f.type}"
            )


def test_causes_generated_files_are_current() -> None:
    """The schemas' fix kinds and the causes page are made from the registry
    (``python scripts/gen_causes.py`` rewrites them)."""
    done = subprocess.run([sys.executable, "scripts/gen_causes.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
