"""Fixes as text edits (``analysis/fixes/edit.py``): the replacement an agent applies, in JSON
and as SARIF ``fixes`` valid against the OASIS SARIF 2.1.0 schema. Hand-made facts, no
TensorFlow: what the edited line computes is checked by ``tests/test_prove.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradscope._src.analysis import fixes
from gradscope._src.analysis.fixes.edit import with_edit
from gradscope._src.analysis.run import problems_of
from gradscope._src.report import Format, render
from gradscope._src.results import run as rr
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.fix import Edit, Fix
from gradscope._src.results.status import Status

SARIF_SCHEMA = Path(__file__).parents[1] / "report" / "data" / "sarif-schema-2.1.0.json"
SCHEMAS = Path(__file__).parents[2] / "schema"

PROGRAM = """import tensorflow as tf

w = tf.Variable([[1.0], [2.0]])
with tf.GradientTape() as tape:
    h = tf.stop_gradient(tf.matmul(x, w))  # frozen
    r = tf.math.round(h * 0.3)
    loss = tf.reduce_sum(r)
both = tf.stop_gradient(a) + tf.stop_gradient(b)
y = round(2.5)
z = tf.stop_gradient(
    tf.matmul(x,
              w))
"""


@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(PROGRAM, encoding="utf-8")
    return tmp_path / "train.py"


def _edit(kind: str, where: str) -> Edit | None:
    fix = with_edit(Fix(kind, where, "text"))
    assert fix is not None
    return fix.edit


def test_edit_removes_a_stop_gradient(program: Path) -> None:
    edit = _edit("remove-stop-gradient", "train.py:5")
    assert edit == Edit("train.py", 5, 5, "    h = tf.stop_gradient(tf.matmul(x, w))  # frozen",
                        "    h = tf.matmul(x, w)  # frozen")  # fmt: skip


def test_edit_spans_the_lines_of_a_call(program: Path) -> None:
    edit = _edit("remove-stop-gradient", "train.py:10")
    assert edit is not None and (edit.start_line, edit.end_line) == (10, 12)
    assert edit.old == "z = tf.stop_gradient(\n    tf.matmul(x,\n              w))"
    assert edit.new == "z = tf.matmul(x,\n              w)"


def test_edit_straight_through_keeps_the_module_written(program: Path) -> None:
    edit = _edit("straight-through", "train.py:6")
    assert edit is not None
    assert edit.new == "    r = (h * 0.3 + tf.stop_gradient(tf.math.round(h * 0.3) - h * 0.3))"


@pytest.mark.parametrize(
    ("kind", "where"),
    [
        ("remove-stop-gradient", "train.py:8"),  # two calls on the line: which one?
        ("straight-through", "train.py:9"),  # Python's own round
        ("remove-stop-gradient", "train.py:3"),  # no such call on the line
        ("remove-stop-gradient", "train.py:99"),  # past the end
        ("remove-stop-gradient", "missing.py:5"),  # no such file
        ("soft-argmax", "train.py:5"),  # not an edit
        ("remove-stop-gradient", ""),  # no line
    ],
)
def test_no_edit_where_the_line_does_not_say_one(program: Path, kind: str, where: str) -> None:
    assert _edit(kind, where) is None


def test_edit_in_a_spec_makes_the_node_an_identity(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.yaml").write_text("nodes:\n  - {name: f, op: stop_gradient, inputs: [h]}\n")
    edit = _edit("remove-stop-gradient", "m.yaml:2")
    assert edit == Edit("m.yaml", 2, 2, "  - {name: f, op: stop_gradient, inputs: [h]}",
                        "  - {name: f, op: identity, inputs: [h]}")  # fmt: skip


def test_edit_round_trips_through_json(program: Path) -> None:
    fix = with_edit(Fix("remove-stop-gradient", "train.py:5", "text"))
    assert fix is not None and fix.to_dict()["edit"]["start_line"] == 5
    assert Fix.from_dict(json.loads(json.dumps(fix.to_dict()))) == fix
    assert "edit" not in Fix("soft-argmax", "train.py:5", "t").to_dict()  # only when one


def _run_report() -> rr.RunReport:
    cut = CutPoint("StopGradient", "StopGradient", "stopped", "train.py:5")
    calls = (
        rr.CallResult(
            "train.py:8",
            "GradientTape.gradient",
            rr.EAGER,
            1,
            "train.py:7",
            2.0,
            (rr.SourceResult("w", Status("none:stopped"), None, (2, 1), False, (cut,)),),
        ),
    )
    calls = tuple(fixes.fixed_calls(calls))  # fmt: skip
    problems = fixes.fixed_run_problems(problems_of(calls, ()), calls)
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", calls, tuple(problems))


def test_json_and_sarif_carry_the_edit_and_sarif_validates(program: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    report = _run_report()
    data = json.loads(render(report, Format.JSON))
    edit = data["calls"][0]["sources"]["w"]["fix"]["edit"]
    assert edit["old"] == "    h = tf.stop_gradient(tf.matmul(x, w))  # frozen"
    jsonschema.validate(data, json.loads((SCHEMAS / "run-v1.json").read_text()))
    log = json.loads(render(report, Format.SARIF, source_root=str(program.parent)))
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(log)
    (result,) = log["runs"][0]["results"]
    (change,) = result["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"]["uri"] == "train.py"
    (replacement,) = change["replacements"]
    assert replacement["deletedRegion"] == {"startLine": 5, "endLine": 5}
    assert replacement["insertedContent"]["text"] == "    h = tf.matmul(x, w)  # frozen"
    # applying the SARIF replacement to the file gives the JSON edit's result
    lines = program.read_text().split("\n")
    lines[4:5] = replacement["insertedContent"]["text"].split("\n")
    assert "tf.stop_gradient(tf.matmul" not in "\n".join(lines)
