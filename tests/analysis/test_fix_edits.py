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


KINDS = """import numpy as np
import tensorflow as tf
import tensorflow.compat.v1 as v1

steps = tf.Variable(0, dtype=tf.int32, name="steps")
done = tf.Variable(0, dtype=tf.int32, trainable=True)
kept = tf.Variable(0, dtype=tf.int32, trainable=flag)
x = tf.constant([1.0, 2.0])
with tf.GradientTape() as tape:
    t = np.tanh(h.numpy())
    u = np.tanh(h.numpy()) + np.asarray(h) + tf.reduce_sum(t)
    k = np.clip(h.numpy(), 0.0, 1.0)
    n = tf.cast(w * 10.0, tf.int32)
    m = tf.cast(layer(w) + tf.reduce_sum(k), tf.int32)
    loss = tf.reduce_sum(tf.cast(n, tf.float32) * x) + tf.cast(m, tf.float32)
    r = tf.cast(tf.cast(w * 3.0, tf.int32), tf.float32)
    d = tf.reduce_sum(x / s)
    e = tf.reduce_sum(x / s / 2.0)
    g = tf.math.log(p)
    q = tf.sqrt(z)
    o = tf.sqrt(z * z)
grads = tape.gradient(loss, [x])
train = opt.minimize(loss)
given = opt.compute_gradients(loss, var_list=[w])
"""


def _site(kind: str, line: int, cause: object = None, c: object = None) -> Edit | None:
    fix = with_edit(Fix(kind, f"train.py:{line}", "text"), cause, c)  # type: ignore[arg-type]
    assert fix is not None
    return fix.edit


@pytest.fixture
def kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(KINDS, encoding="utf-8")
    return tmp_path / "train.py"


def _lines(edit: Edit | None) -> tuple[int, int, str, str] | None:
    return None if edit is None else (edit.start_line, edit.end_line, edit.old, edit.new)


def test_edit_not_floating_declares_the_variable_not_trainable(kinds: Path) -> None:
    from gradscope._src.results.causes import NotFloating

    cause = NotFloating(line="train.py:5", dtype="int32")
    assert _lines(_site("not-floating", 5, cause)) == (
        5, 5, 'steps = tf.Variable(0, dtype=tf.int32, name="steps")',
        'steps = tf.Variable(0, dtype=tf.int32, name="steps", trainable=False)')  # fmt: skip
    assert _site("not-floating", 6, cause).new == (  # type: ignore[union-attr]
        "done = tf.Variable(0, dtype=tf.int32, trainable=False)"
    )
    assert _site("not-floating", 7, cause) is None  # trainable=flag: not a literal to flip


def test_edit_keeps_tensorflow_ops_with_the_numpy_functions_twin(kinds: Path) -> None:
    assert _site("keep-tensorflow-ops", 10).new == "    t = tf.math.tanh(h)"  # type: ignore[union-attr]
    assert _site("keep-tensorflow-ops", 12).new == "    k = tf.clip_by_value(h, 0.0, 1.0)"  # type: ignore[union-attr]
    assert _site("keep-tensorflow-ops", 11) is None  # the value leaves TensorFlow twice there


@pytest.mark.parametrize(
    ("program", "edited"),
    [
        ("v = np.tanh(h.numpy())\nloss = tf.reduce_sum(v * 2.0)\n", True),
        ("loss = tf.reduce_sum(np.exp(h.numpy())[0])\n", True),
        ("v = np.tanh(h.numpy())\nm = v.mean()\n", False),  # a NumPy method
        ("v = np.tanh(h.numpy())\nprint(v)\n", False),  # read by other code
        ("w = np.tanh(h.numpy())\n", False),  # never read: nothing to keep in TensorFlow
    ],
)
def test_keep_tensorflow_ops_only_where_a_tensor_does_as_well(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: str, edited: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    text = "import numpy as np\nimport tensorflow as tf\n" + program
    (tmp_path / "train.py").write_text(text, encoding="utf-8")
    assert (_site("keep-tensorflow-ops", 3) is not None) is edited


def test_edit_straight_through_an_integer_cast_read_back_as_float(kinds: Path) -> None:
    from gradscope._src.results.causes import Rounding

    cast = Rounding(line="train.py:13", op="Cast")
    edit = _site("straight-through", 13, cast)
    assert _lines(edit) == (15, 15, KINDS.split("\n")[14], (
        "    loss = tf.reduce_sum((tf.cast(w * 10.0, tf.float32) + tf.stop_gradient("
        "tf.cast(n, tf.float32) - tf.cast(w * 10.0, tf.float32))) * x) "
        "+ tf.cast(m, tf.float32)"))  # fmt: skip
    assert _site("straight-through", 14, cast) is None  # layer(w) would run twice
    same_line = _site("straight-through", 16, cast)
    assert same_line is not None and same_line.new == (
        "    r = (tf.cast(w * 3.0, tf.float32) + tf.stop_gradient(tf.cast(tf.cast(w * 3.0, "
        "tf.int32), tf.float32) - tf.cast(w * 3.0, tf.float32)))")  # fmt: skip


def test_edit_guards_a_division_a_log_and_a_root(kinds: Path) -> None:
    from gradscope._src.results.causes import NanDivide, NanLog, NanRoot

    div = NanDivide(line="train.py:17", op="RealDiv")
    assert _site("divide-no-nan", 17, div).new == (  # type: ignore[union-attr]
        "    d = tf.reduce_sum(tf.math.divide_no_nan(x, s))"
    )
    assert _site("divide-no-nan", 18, div) is None  # two divisions: which one?
    assert _site("divide-no-nan", 17, NanDivide(line="train.py:17", op="FloorDiv")) is None
    log = NanLog(line="train.py:19", op="Log")
    assert _site("safe-log", 19, log).new == "    g = tf.math.log(tf.maximum(p, 1e-7))"  # type: ignore[union-attr]
    root = NanRoot(line="train.py:20", op="Sqrt")
    assert _site("double-where", 20, root).new == (  # type: ignore[union-attr]
        "    q = tf.where(z > 0, tf.sqrt(tf.where(z > 0, z, 1.0)), 0.0)"
    )
    assert _site("double-where", 21, root) is None  # z * z would be computed three times


def test_edit_watch_goes_first_in_the_tapes_block(kinds: Path) -> None:
    edit = _site("watch", 22)
    assert _lines(edit) == (10, 10, "    t = np.tanh(h.numpy())",
                            "    tape.watch([x])\n    t = np.tanh(h.numpy())")  # fmt: skip


@pytest.mark.parametrize(
    "program",
    [
        "with tf.GradientTape() as tape:\n    y = x * x\ng = tape.gradient(y, [x, w])\n",
        "x = 1\nwith tf.GradientTape() as tape:\n    x = f()\ng = tape.gradient(x, x)\n",
        "x = 1\nwith tf.GradientTape() as tape: y = x * x\ng = tape.gradient(y, x)\n",
        "x = 1\nwith tf.GradientTape() as tape:\n    y = x\ng = tape.gradient(y, m.v)\n",
        "x = 1\nwith tf.GradientTape() as tape:\n    y = x\nx = 2\ng = tape.gradient(y, x)\n",
    ],
    ids=["unbound", "rebound-in-block", "one-line-block", "attribute", "rebound-after"],
)
def test_no_watch_edit_where_the_sources_are_unsure(tmp_path: Path, monkeypatch,
                                                    program: str) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(program, encoding="utf-8")
    line = program.count("\n")
    assert _site("watch", line) is None


def test_edit_var_list_names_the_variables_the_loss_reads(kinds: Path) -> None:
    from gradscope._src.results.causes import NoVarList

    cause = NoVarList(api="minimize", names=("body", "head"))
    assert _site("var-list", 23, cause).new == (  # type: ignore[union-attr]
        "train = opt.minimize(loss, var_list=[v for v in v1.trainable_variables() "
        "if v.op.name in ('body', 'head')])"
    )
    assert _site("var-list", 24, cause) is None  # a var_list is given
    assert _site("var-list", 23, NoVarList(api="minimize")) is None  # no names: which ones?


MOVES = """import tensorflow as tf

fake = generator(z)
with tf.GradientTape() as tape, tf.GradientTape() as other:
    loss = d(fake)
grads = tape.gradient(loss, g.trainable_variables)
late = generator(z)

with tf.GradientTape() as other2:
    loss2 = d(late)
grads2 = other2.gradient(loss2, g.trainable_variables)
padded = tf.pad(x, paddings, constant_values=fill)
wild = tf.pad(layer(x), paddings, constant_values=fill)
g1 = tf.gradients(loss, [w], stop_gradients=[y])
g2 = tf.gradients(loss, [w], stop_gradients=[y, h])
"""


def test_edit_moves_the_line_before_the_tape_into_its_block(tmp_path: Path, monkeypatch) -> None:
    from gradscope._src.results.causes import Context, OutsideTape

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(MOVES, encoding="utf-8")
    cause = OutsideTape(line="train.py:3", op="MatMul")
    edit = _site("move-into-tape", 3, cause, Context("none:disconnected", site="train.py:6"))
    assert _lines(edit) == (3, 4, MOVES.split("\n")[2] + "\n" + MOVES.split("\n")[3],
                            MOVES.split("\n")[3] + "\n    fake = generator(z)")  # fmt: skip
    # a blank line before the block, and a block that is not the asking tape's: no edit
    later = Context("none:disconnected", site="train.py:11")
    assert _site("move-into-tape", 7, cause, later) is None
    assert _site("move-into-tape", 3, cause, later) is None


def test_edit_pads_through_a_mask_and_drops_one_stopped_tensor(tmp_path: Path, monkeypatch) -> None:
    from gradscope._src.results.causes import Context, NoneInput

    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(MOVES, encoding="utf-8")
    pad = NoneInput(line="train.py:12", op="PadV2")
    assert _site("differentiable-op", 12, pad).new == (  # type: ignore[union-attr]
        "padded = (tf.pad(x, paddings) + fill * tf.pad(tf.zeros_like(x), paddings, "
        "constant_values=1))"
    )
    assert _site("differentiable-op", 13, pad) is None  # layer(x) would run twice
    (tmp_path / "train.py").write_text(
        MOVES.replace("constant_values=fill)\nwild", "constant_values=-np.inf)\nwild")
    )
    assert _site("differentiable-op", 12, pad) is None  # -inf times the mask's 0: NaN
    fused = NoneInput(line="train.py:12", op="FusedBatchNormV3")
    assert _site("differentiable-op", 12, fused) is None  # its arguments are not the same
    at = Context("none:stopped", site="train.py:14")
    assert _site("stop-gradients-argument", 99, None, at).new == (  # type: ignore[union-attr]
        "g1 = tf.gradients(loss, [w])"
    )
    two = Context("none:stopped", site="train.py:15")
    assert _site("stop-gradients-argument", 99, None, two) is None  # which of the two?
