"""The gradient-flow benchmark (bench/gradflow): every header, the scoring on hand-made facts,
and a slice of the set run for real: a few programs forked from a warm TensorFlow driver
(``tests/forked.py``), their truth against their labels, and gradscope on one of them.
``make gradflow`` runs the whole table."""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from bench.gradflow import cases, score, tools
from bench.gradflow import run as runner
from tests.conftest import Processes

# The forked slice of make test: a TensorFlow 1 graph (it turns eager execution off for good);
# an eager tape's pair and a Keras fit's run in the test process.
_SLICE = ("tf1_where_division_nan",)
# gradscope's fix kinds a header may name (schema/run-v1.json lists them; watch is a cut fix).
_FIX_KINDS = {*tools.GRADSCOPE_FIX_CAUSES, "watch", "-"}


def test_gradflow_headers_every_pair() -> None:
    """At least 60 pairs, every kind, every label from its vocabulary, lines on code."""
    everything = cases.load()
    assert len(everything) >= 60
    assert {c.kind for c in everything} == set(cases.KINDS)
    assert any(c.backend == "jax" for c in everything)
    for case in everything:
        assert set(case.fixes) <= _FIX_KINDS, case.name
        lines = case.buggy.read_text().splitlines()
        for number in case.lines:
            code = lines[number - 1].strip()
            assert code and not code.startswith("#"), f"{case.buggy.name}:{number}"
        assert _body(case.fixed) != _body(case.buggy), case.name


def _body(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return lines


def test_gradflow_header_errors_name_file_and_line(tmp_path: Path) -> None:
    program = tmp_path / "bad.py"
    program.write_text("# gradflow: buggy\n# title: t\nimport os\n")
    with pytest.raises(cases.HeaderError, match=r"bad\.py:1: the header lacks source"):
        cases.read_header(program)
    program.write_text("# gradflow: buggy\n# title: t\n# title: u\n")
    with pytest.raises(cases.HeaderError, match=r"bad\.py:3: 'title' given twice"):
        cases.read_header(program)


def _report(**source: Any) -> dict[str, Any]:
    return {
        "calls": [{"site": "p.py:9", "step": 1, "sources": {"w": source}}],
        "problems": [{"site": "p.py:9", "step": 1, "variable": "w", "kind": "unexpected-none"}],
    }


def test_gradflow_gradscope_verdict_cause_line_fix() -> None:
    """The cause comes from the fix's kind, else the status; the fix's line comes first."""
    fix = {"kind": "move-into-tape", "where": "/abs/p.py:4", "text": "", "candidates": []}
    cut = {"node": "x", "op": "MatMul", "kind": "stopped", "source": "p.py:6"}
    verdict = tools.judge_gradscope(_report(status="none:disconnected", cut_points=[cut], fix=fix))
    assert verdict == tools.Verdict(
        flagged=True,
        causes=("outside-tape",),
        lines=("p.py:4", "p.py:6"),
        fix=tools.Fix(kind="move-into-tape", where="p.py:4"),
    )
    assert tools.judge_gradscope(_report(status="none:stopped")).causes == ("stop-gradient",)
    quiet = tools.judge_gradscope({"calls": [], "problems": []})
    assert not quiet.flagged


def test_gradflow_gradscope_on_another_backend_is_a_miss() -> None:
    """A Keras-on-JAX program: gradscope's refusal (exit 2, one line) and a report of
    TensorFlow gradient calls (the program was watched on another backend) both score as not
    detected, with what happened as the error; a report of its JAX calls is judged."""
    program = Path("jax_p.py")
    refusal = (
        "gradscope run: the program computes its gradients with JAX (...): nothing was checked"
    )
    refused = tools.Finished(program, 2, 1.0, 1.0, "", f"banner\n{refusal}\n", [], "", "jax")
    verdict = tools.Gradscope().judge(refused)
    assert not verdict.flagged and verdict.error == f"no report (exit code 2): {refusal}"
    report = json.dumps(_report(status="none:nondifferentiable"))
    watched = tools.Finished(program, 1, 1.0, 1.0, "", "", [], report, "jax")
    verdict = tools.Gradscope().judge(watched)
    assert not verdict.flagged and "TensorFlow backend, not the jax backend" in verdict.error
    assert tools.Gradscope().judge(dataclasses.replace(watched, backend="tensorflow")).flagged
    # watched on the backend it chose (the report says jax): judged as any other report
    on_jax = json.dumps({**_report(status="none:disconnected"), "backend": "jax"})
    verdict = tools.Gradscope().judge(dataclasses.replace(watched, output=on_jax))
    assert verdict.flagged and not verdict.error


def test_gradflow_rejudge_reads_kept_runs(tmp_path: Path) -> None:
    """--rejudge: a tool's own run judged again from the --keep folder; a fix's applied stays
    when its edits are the same; the plain run's tools are left as they were."""
    report = _report(status="none:stopped")
    fix = {"kind": "remove-stop-gradient", "where": "p.py:9",
           "edits": [{"line": 9, "old": "a", "new": "b"}]}  # fmt: skip
    report["problems"][0]["fix"] = fix
    (tmp_path / "p.gradscope.out").write_text(json.dumps(report))
    kept = {"code": 0, "seconds": 4.0, "cpu_seconds": 3.0, "stdout": "", "stderr": ""}
    (tmp_path / "p.gradscope.run.json").write_text(json.dumps(kept))
    old = {"flagged": False, "seconds": 4.0, "cpu_seconds": 3.0, "fix": {**fix, "applied": True}}
    naive = {"flagged": True, "seconds": 1.0, "cpu_seconds": 1.0}
    row = {
        "file": "p.py",
        "backend": "tensorflow",
        "plain": {"code": 0},
        "verdicts": {"gradscope": old, "print None": naive},
    }
    assert runner.rejudge([row], tmp_path, tools.TOOLS) == 1
    new = row["verdicts"]["gradscope"]
    assert new["flagged"] and new["causes"] == ["stop-gradient"] and new["lines"] == ["p.py:9"]
    assert new["fix"]["applied"] is True and new["cpu_seconds"] == 3.0
    assert row["verdicts"]["print None"] is naive


def test_gradflow_builtin_messages_and_check_numerics() -> None:
    program = Path("prog.py")
    stderr = (
        'Traceback (most recent call last):\n  File "/x/prog.py", line 12, in <module>\n'
        "ValueError: No gradients provided for any variable.\n"
    )
    run = tools.Finished(program, 1, 1.0, 1.0, "", stderr, [])
    assert tools.KerasWarning().judge(run) == tools.Verdict(flagged=True, lines=("prog.py:12",))
    numerics = (
        '!!! Detected Infinity or NaN in output 0 of graph op "Log" !!!\n'
        "  Stack trace of op's creation:\n"
        '    File "/x/prog.py", line 3, in <module>\n    File "/x/prog.py", line 7, in f\n'
    )
    run = tools.Finished(program, 1, 1.0, 1.0, "", numerics, [])
    verdict = tools.CheckNumerics().judge(run)
    assert verdict == tools.Verdict(flagged=True, causes=("nan",), lines=("prog.py:7",))
    broken = tools.Finished(program, 1, 1.0, 1.0, "", "TypeError: not a valid JAX type\n", [],
                            alone=0)  # fmt: skip
    verdict = tools.CheckNumerics().judge(broken)
    assert verdict.error == "the program exits 1 under it, 0 alone: TypeError: not a valid JAX type"
    truth = [{"site": "prog.py:5", "sources": {"w": "none", "b": "ok"}}]
    assert tools.Naive().judge(tools.Finished(program, 0, 1.0, 1.0, "", "", truth)).flagged


def _row(role: str, flagged: bool, **verdict: Any) -> dict[str, Any]:
    return {
        "file": "p.py" if role == "buggy" else "p_fixed.py",
        "role": role,
        "kind": "tape",
        "effect": "none",
        "cause": "numpy",
        "lines": [4],
        "fixes": ["keep-tensorflow-ops"],
        "truth": ["none"] if role == "buggy" else ["ok"],
        "plain": {"cpu_seconds": 2.0},
        "verdicts": {"t": {"flagged": flagged, "seconds": 1.0, "cpu_seconds": 3.0, **verdict}},
    }


def test_gradflow_scores_count_each_column() -> None:
    """Recall, precision and false alarms over both twins; cause, line and fix only where the
    tool flagged the buggy program and named the labelled one first."""
    fix = {"kind": "keep-tensorflow-ops", "where": "p.py:4"}
    rows = [
        _row("buggy", True, causes=["numpy"], lines=["p.py:4"], fix=fix),
        _row("fixed", False),
        _row(
            "buggy",
            True,
            causes=["unused"],
            lines=["p.py:9", "p.py:4"],
            fix={**fix, "applied": False},
        ),
        _row("fixed", True),
        _row("buggy", False, causes=["numpy"], lines=["p.py:4"]),
        _row("fixed", False),
    ]
    s = score.score(rows, "t")
    assert (s.buggy, s.detected, s.false_alarms, s.causes, s.lines, s.fixes) == (3, 2, 1, 1, 1, 1)
    assert s.precision == pytest.approx(2 / 3)
    assert (s.fixes_applied, s.median_cpu, s.cpu_ratio) == (1, 3.0, 1.5)
    table = score.table([s], {"t": {"cause"}})
    assert "| t | 2/3 (67%) | 0.67 | 1/3 (33%) | 1/3 (33%) | gives none |" in table
    assert score.truth_agrees(rows[0]) and score.truth_agrees(rows[1])
    assert not score.truth_agrees({**rows[1], "truth": ["nan"]})
    assert not score.truth_agrees({**rows[1], "truth": []})  # a twin that recorded nothing


def _copy(name: str, folder: Path) -> None:
    for file in (f"{name}.py", f"{name}_fixed.py", "_truth.py"):
        shutil.copy(cases.PROGRAMS / file, folder / file)


@pytest.mark.tf
def test_gradflow_slice_truth_agrees_with_labels(
    python_processes: Processes, tmp_path: Path
) -> None:
    """Bare TensorFlow shows each buggy program's labelled effect and nothing on its twin (the
    program's own session reads the gradients); the naive tool reads the same runs."""
    chosen = {c.name: c for c in cases.load() if c.name in _SLICE}
    for name, case in chosen.items():
        _copy(name, tmp_path)
        for role, path in (("buggy", case.buggy), ("fixed", case.fixed)):
            truth = tmp_path / f"{path.stem}.jsonl"
            env = {**os.environ, "GRADFLOW_TRUTH": str(truth)}  # the session's driver's
            done = python_processes([str(tmp_path / path.name)], tmp_path, env, kill_after=300)
            records = [json.loads(line) for line in truth.read_text().splitlines()]
            seen = tools.truth_statuses(records)
            row = {"role": role, "effect": case.effect, "truth": sorted(seen)}
            assert score.truth_agrees(row), (path.name, seen, done.stderr[-2000:])
            run = tools.Finished(Path(path.name), done.returncode, 0, 0, done.stdout, done.stderr,
                                 records)  # fmt: skip
            assert tools.Naive().judge(run).flagged == (role == "buggy" and "none" in seen)


def _truth_here(path: Path, folder: Path) -> tools.Finished:
    """The plain run of an eager program in this process, as ``python PROGRAM`` with
    GRADFLOW_TRUTH set: the truth its hooks wrote and the warnings it gave (as its stderr)."""
    truth = folder / f"{path.stem}.jsonl"
    os.environ["GRADFLOW_TRUTH"] = str(truth)
    sys.path.insert(0, str(path.parent))
    sys.modules.pop("_truth", None)  # its hooks read GRADFLOW_TRUTH when imported
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.modules.pop("_truth", None)
        sys.path.remove(str(path.parent))
        del os.environ["GRADFLOW_TRUTH"]
    records = [json.loads(line) for line in truth.read_text().splitlines()]
    stderr = "".join(f"{w.filename}:{w.lineno}: {w.message}\n" for w in said)
    return tools.Finished(path, 0, 0, 0, "", stderr, records)


@pytest.mark.tf
def test_gradflow_slice_keras_fit_truth_and_warning(tmp_path: Path) -> None:
    """A Keras fit's pair in this process: what fit's train step hands the optimizer (the
    truth hook on apply_gradients) shows the labelled None, nothing on the twin; Keras' own
    warning and the naive tool read the same runs."""
    (case,) = [c for c in cases.load() if c.name == "fit_output_without_loss"]
    for role, path in (("buggy", case.buggy), ("fixed", case.fixed)):
        run = _truth_here(path, tmp_path)
        seen = tools.truth_statuses(run.truth)
        assert score.truth_agrees({"role": role, "effect": case.effect, "truth": sorted(seen)})
        assert tools.Naive().judge(run).flagged == (role == "buggy")
        assert tools.KerasWarning().judge(run).flagged == (role == "buggy"), run.stderr


@pytest.mark.tf
def test_gradflow_slice_gradscope_finds_cause_and_line(tmp_path: Path) -> None:
    """An eager pair in this process: bare TensorFlow's truth agrees with its labels, and
    gradscope (gradscope.run: its report is what ``run --format json`` writes), judged by the
    adapter the table uses, names the labelled cause, line and fix, and is quiet on the twin."""
    import gradscope

    (case,) = [c for c in cases.load() if c.name == "tape_assign_patch"]
    verdicts = {}
    for role, path in (("buggy", case.buggy), ("fixed", case.fixed)):
        seen = tools.truth_statuses(_truth_here(path, tmp_path).truth)
        assert score.truth_agrees({"role": role, "effect": case.effect, "truth": sorted(seen)})
        report = gradscope.run(str(path)).to_dict()
        run = tools.Finished(path, 0, 0, 0, "", "", [], json.dumps(report))
        verdicts[path.name] = tools.Gradscope().judge(run)
    found = verdicts[case.buggy.name]
    assert found.flagged and found.causes[0] == case.cause
    assert found.lines[0] == f"{case.buggy.name}:{case.lines[0]}"
    assert found.fix is not None and found.fix.kind in case.fixes
    assert not verdicts[case.fixed.name].flagged
