"""Names as they are in results and the JSON formats, escaped in every other: a name holding a
newline and a workflow command, a terminal escape or a lone surrogate is shown as
``gradscope._src.printable`` writes it in every format read as lines or markup, and can never
start a line of its own (forge a GitHub annotation, break a table); the JSON report holds the
name itself (its encoder escapes the newline), so it reads back as the name. It held the two
characters ``\n``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.printable import shown
from gradscope._src.results import report as m
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.run import CallResult, RunProblem, RunReport, SourceResult
from gradscope._src.results.status import ProblemKind, Status

FORGED = "a\n::error file=x.py,line=1::forged\ud800"
SHOWN = "a\\n::error file=x.py,line=1::forged\\ud800"


def test_results_hold_names_as_they_are_and_shown_escapes_them() -> None:
    cut = CutPoint(FORGED, "StopGradient", "stopped", f"{FORGED}.py:3")
    pair = m.PairResult(FORGED, Status.STOPPED, None, (), False, (cut,))
    loss = m.LossResult(FORGED, 1.0, (pair,), source=FORGED, notes=(FORGED,))
    problem = m.Problem.problem(FORGED, FORGED, ProblemKind.UNEXPECTED_NONE, f"{FORGED} has none")
    report = m.Report(FORGED, FORGED, "2", "CPU:0", (), (loss,), (problem,), (FORGED,))
    assert (report.spec, pair.variable, cut.node, problem.message) == (
        FORGED, FORGED, FORGED, f"{FORGED} has none")  # fmt: skip
    assert report.loss(FORGED).pair(FORGED) is pair  # looked up by the name itself
    written = report.to_dict()
    assert written["losses"][FORGED]["variables"][FORGED]["cut_points"][0]["node"] == FORGED
    seen = shown(report)
    (seen_loss,) = seen.losses
    (seen_pair,) = seen_loss.pairs
    assert (seen.spec, seen.name, seen.notes) == (SHOWN, SHOWN, (SHOWN,))
    assert (seen_loss.name, seen_loss.source, seen_loss.notes) == (SHOWN, SHOWN, (SHOWN,))
    assert (seen_pair.variable, seen_pair.cut_points[0].node) == (SHOWN, SHOWN)
    assert seen_pair.cut_points[0].source == f"{SHOWN}.py:3"
    assert (seen.problems[0].variable, seen.problems[0].message) == (SHOWN, f"{SHOWN} has none")
    source = SourceResult(FORGED, Status.OK, 1.0, (), False)
    call = CallResult(f"{FORGED}.py:5", "GradientTape.gradient", "eager", 1, f"{FORGED}.py:4",
                      1.0, (source,))  # fmt: skip
    problem = RunProblem.run_problem(call.site, 1, FORGED, ProblemKind.NAN, FORGED)
    run = RunReport(f"{FORGED}.py", (f"{FORGED}.py", "--x\n"), "2", "CPU:0", (call,),
                    (problem,))  # fmt: skip
    assert (run.program, run.calls[0].sources[0].name) == (f"{FORGED}.py", FORGED)
    seen_run = shown(run)
    assert (seen_run.program, seen_run.argv) == (f"{SHOWN}.py", (f"{SHOWN}.py", "--x\\n"))
    assert seen_run.calls[0].sources[0].name == SHOWN
    assert seen_run.calls[0].site == f"{SHOWN}.py:5"
    assert (seen_run.problems[0].variable, seen_run.problems[0].message) == (SHOWN, SHOWN)
    plain = m.PairResult("dense/kernel é", Status.OK, 1.0, (), False)
    assert shown(plain) is plain


PROGRAM = """\
import tensorflow as tf
w = tf.Variable(1.0)
v = tf.Variable(2.0)
with tf.GradientTape() as tape:
    loss = w * 2.0
tape.gradient(loss, [w, v])
"""


@pytest.mark.tf
def test_run_script_name_cannot_forge_annotations_in_any_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "a\n::error file=x.py,line=1::forged.py"
    (tmp_path / name).write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for fmt in ("github", "table", "markdown", "json", "junit", "sarif"):
        result = CliRunner().invoke(main, ["run", "--format", fmt, name])
        assert result.exit_code == 1, result.output
        report = result.stderr + result.stdout
        assert "::error file=x.py" not in [line[:17] for line in report.splitlines()], fmt
        assert "a\\n::error file=x.py,line=1::forged.py" in report.replace("\\\\", "\\"), fmt
    result = CliRunner().invoke(main, ["run", "--format", "json", "--output", "-", name])
    assert json.loads(result.stdout)["program"] == name  # the name itself, newline and all
    result = CliRunner().invoke(main, ["run", "--format", "sarif", "--output", "-", name])
    assert any(name in text for text in _strings(json.loads(result.stdout)))  # as it is


def _strings(data: object) -> list[str]:
    """Every string a JSON document holds (keys and values)."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in (k, *_strings(v))]
    if isinstance(data, list):
        return [s for v in data for s in _strings(v)]
    return []


NEWLINE = """\
import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w\\nx")
v = tf.Variable([1.0], name="v")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(w * 3.0)
tape.gradient(loss, [w, v])
"""


@pytest.mark.tf
def test_a_name_with_a_newline_is_itself_in_json_and_escaped_in_every_other_format(
    tmp_path: Path,
) -> None:
    """The JSON report's key held the two characters ``\\n``: it is the name TensorFlow
    gives the variable (the encoder writes its newline as the escape ``\\n``, which reads
    back as the newline); the timeline too. Every line-based format shows ``w\\nx`` on one
    line."""
    import tensorflow as tf

    from tests.conftest import run_in_process

    name = tf.Variable([1.0], name="w\nx").name.removesuffix(":0")  # bare TensorFlow's name
    assert name == "w\nx"
    (tmp_path / "train.py").write_text(NEWLINE, encoding="utf-8")
    done = run_in_process("run", "--format", "json", "-o", "r.json", "--timeline", "t.json",
                          "train.py", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    text = (tmp_path / "r.json").read_text(encoding="utf-8")
    assert '"w\\nx": {' in text  # the JSON escape of the newline, in the key
    (call,) = json.loads(text)["calls"]
    assert list(call["sources"]) == [name, "v"]
    timeline = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert list(timeline["steps"][0]["variables"]) == [name, "v"]
    import gradscope
    from gradscope._src.report import render

    report = gradscope.run(str(tmp_path / "train.py"))  # the same run, as the API gives it
    assert [s.name for s in report.calls[0].sources] == [name, "v"]
    for fmt in ("table", "markdown", "github", "junit", "sarif"):
        shown_text = render(report, fmt)
        assert "w\\nx" in shown_text, fmt  # one line: the escape, as printable writes it
        assert not any(line.lstrip(" |`[<\"'").startswith("x") and "w" not in line
                       for line in shown_text.splitlines()), fmt  # fmt: skip
    sarif = json.loads(render(report, "sarif"))
    assert any(name in text for text in _strings(sarif))  # JSON: the name itself
