"""One escaping of names for every format: a name holding a newline and a workflow command,
a terminal escape or a lone surrogate is shown as ``gradscope._src.printable`` writes it, in every
format, and can never start a line of its own (forge a GitHub annotation, break a table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.results import report as m
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.run import CallResult, RunProblem, RunReport, SourceResult
from gradscope._src.results.status import ProblemKind, Status

FORGED = "a\n::error file=x.py,line=1::forged\ud800"
SHOWN = "a\\n::error file=x.py,line=1::forged\\ud800"


def test_results_hold_names_escaped_once() -> None:
    cut = CutPoint(FORGED, "StopGradient", "stopped", f"{FORGED}.py:3")
    pair = m.PairResult(FORGED, Status.STOPPED, None, (), False, (cut,))
    loss = m.LossResult(FORGED, 1.0, (pair,), source=FORGED, notes=(FORGED,))
    problem = m.Problem.problem(FORGED, FORGED, ProblemKind.UNEXPECTED_NONE, f"{FORGED} has none")
    report = m.Report(FORGED, FORGED, "2", "CPU:0", (), (loss,), (problem,), (FORGED,))
    assert (report.spec, report.name, report.notes) == (SHOWN, SHOWN, (SHOWN,))
    assert (loss.name, loss.source, loss.notes, pair.variable) == (SHOWN, SHOWN, (SHOWN,), SHOWN)
    assert (cut.node, cut.source) == (SHOWN, f"{SHOWN}.py:3")
    assert (problem.loss, problem.variable, problem.message) == (SHOWN, SHOWN, f"{SHOWN} has none")
    source = SourceResult(FORGED, Status.OK, 1.0, (), False)
    call = CallResult(f"{FORGED}.py:5", "GradientTape.gradient", "eager", 1, f"{FORGED}.py:4",
                      1.0, (source,))  # fmt: skip
    problem = RunProblem.run_problem(call.site, 1, FORGED, ProblemKind.NAN, FORGED)
    run = RunReport(f"{FORGED}.py", (f"{FORGED}.py", "--x\n"), "2", "CPU:0", (call,),
                    (problem,))  # fmt: skip
    assert (source.name, call.site, call.target_source) == (SHOWN, f"{SHOWN}.py:5", f"{SHOWN}.py:4")
    assert (run.program, run.argv) == (f"{SHOWN}.py", (f"{SHOWN}.py", "--x\\n"))
    assert (run.problems[0].variable, run.problems[0].message) == (SHOWN, SHOWN)
    plain = m.PairResult("dense/kernel é", Status.OK, 1.0, (), False)
    assert plain.variable == "dense/kernel é"


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
    assert json.loads(result.stdout)["program"] == "a\\n::error file=x.py,line=1::forged.py"
