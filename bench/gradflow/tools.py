"""The tools the benchmark scores, each behind one small adapter.

An adapter says which run of a program it reads (``run``: the plain run every program gets, or
a run of its own with ``argv``), and turns that run into a :class:`Verdict`: did it flag the
program, and what cause, lines and fix did it name. README.md, "Scoring another tool", shows
how to add one. This module imports no TensorFlow.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

# The plain run: ``python PROGRAM`` with GRADFLOW_TRUTH set (what bare TensorFlow returned).
PLAIN = "plain"


@dataclass(frozen=True)
class Finished:
    """One finished run of a program: how it ended and what it left."""

    program: Path
    code: int | None  # None: killed at the time limit
    seconds: float  # wall time
    cpu_seconds: float  # user + system time of the process and its children
    stdout: str
    stderr: str
    truth: list[dict[str, Any]]  # the JSON lines the program's hooks wrote (plain run)
    output: str = ""  # a file the tool wrote (gradscope's --output), as text
    backend: str = "tensorflow"  # the Keras backend the program chooses (its header's)
    alone: int | None = 0  # the exit code of the program's plain run


@dataclass(frozen=True)
class Fix:
    """A fix a tool proposes: its kind, where, and (when it has one) a text edit."""

    kind: str
    where: str  # FILE:LINE, or "" when the tool names no line
    edits: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Verdict:
    """What one tool said about one program."""

    flagged: bool
    causes: tuple[str, ...] = ()  # in the benchmark's vocabulary (cases.CAUSES); first is main
    lines: tuple[str, ...] = ()  # FILE:LINE places the tool names as the bug, first is main
    fix: Fix | None = None
    error: str = ""  # the tool itself failed (no report, a crash of its own, a timeout)


class Tool(Protocol):
    """A tool under test: ``run`` names the run it reads, ``argv`` makes its own run."""

    name: str
    run: str
    about: str

    def argv(self, program: Path, output: Path) -> list[str]:
        """The command of its own run (unused when ``run`` is PLAIN)."""
        ...

    def judge(self, run: Finished) -> Verdict:
        """What it said about the program of ``run``."""
        ...


def truth_statuses(truth: Iterable[Mapping[str, Any]]) -> set[str]:
    """Every status bare TensorFlow showed (none, nan, zero, ok; untrained from ``moved``)."""
    seen: set[str] = set()
    for entry in truth:
        seen.update(entry.get("sources", {}).values())
        if any(not moved for moved in entry.get("moved", {}).values()):
            seen.add("untrained")
    return seen


def _program_lines(text: str, program: Path) -> list[str]:
    """``FILE:LINE`` of each traceback frame in ``program``, in order of appearance."""
    pattern = re.compile(r'File "([^"]+)", line (\d+)')
    found = []
    for match in pattern.finditer(text):
        if Path(match.group(1)).name == program.name:
            found.append(f"{program.name}:{match.group(2)}")
    return found


@dataclass
class Naive:
    """A user printing which gradients are None: the truth hooks themselves."""

    name: str = "print None"
    run: str = PLAIN
    about: str = (
        "a user printing `[g is None for g in grads]` after each gradient call "
        "(the benchmark's own truth hooks): sees None, names no cause or line"
    )

    def argv(self, program: Path, output: Path) -> list[str]:
        return []

    def judge(self, run: Finished) -> Verdict:
        if not run.truth and run.code is None:
            return Verdict(flagged=False, error="timed out")
        return Verdict(flagged="none" in truth_statuses(run.truth))


_KERAS_MESSAGES = ("Gradients do not exist for variables", "No gradients provided for any variable")


@dataclass
class KerasWarning:
    """Keras' (and TensorFlow 1's) own messages about missing gradients, from the plain run."""

    name: str = "Keras warning"
    run: str = PLAIN
    about: str = (
        "the plain run's output holds Keras' warning \"Gradients do not exist for "
        'variables" or the error "No gradients provided for any variable"'
    )

    def argv(self, program: Path, output: Path) -> list[str]:
        return []

    def judge(self, run: Finished) -> Verdict:
        text = run.stdout + run.stderr
        if not any(message in text for message in _KERAS_MESSAGES):
            return Verdict(flagged=False)
        # The error's traceback names the program's line that asked (apply_gradients, minimize).
        lines = _program_lines(text, run.program)
        return Verdict(flagged=True, lines=tuple(lines[-1:]))


_NUMERICS = r"""
import os, runpy, sys
import tensorflow as tf
tf.debugging.enable_check_numerics()
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@dataclass
class CheckNumerics:
    """``tf.debugging.enable_check_numerics()`` before the program runs."""

    name: str = "check_numerics"
    run: str = "numerics"
    about: str = (
        "`tf.debugging.enable_check_numerics()` called before the program: flags the "
        "first op that outputs a NaN or an infinity, at the line that made it"
    )

    def argv(self, program: Path, output: Path) -> list[str]:
        return [sys.executable, "-c", _NUMERICS, str(program)]

    def judge(self, run: Finished) -> Verdict:
        text = run.stderr
        if "Detected Infinity or NaN" not in text and "had NaN values" not in text:
            error = "timed out" if run.code is None else ""
            if run.code is not None and run.code != run.alone:  # it broke the program
                error = f"the program exits {run.code} under it, {run.alone} alone: "
                error += _last_line(text)
            return Verdict(flagged=False, error=error)
        creation = text.split("Stack trace of op's creation", 1)
        lines = _program_lines(creation[1] if len(creation) == 2 else text, run.program)
        return Verdict(flagged=True, causes=("nan",), lines=tuple(lines[-1:]))


# gradscope's fix kinds and statuses in the benchmark's cause vocabulary (README.md).
GRADSCOPE_FIX_CAUSES = {
    "move-into-tape": "outside-tape",
    "keep-tensorflow-ops": "numpy",
    "watch": "unwatched",
    "remove-stop-gradient": "stop-gradient",
    "stop-gradients-argument": "stop-gradient",
    "assign-as-tensor": "assign",
    "soft-argmax": "nondifferentiable",
    "straight-through": "nondifferentiable",
    "soft-comparison": "nondifferentiable",
    "no-gradient-op": "nondifferentiable",
    "custom-gradient": "nondifferentiable",
    "not-floating": "integer",
    "build-add-weight": "untracked",
    "differentiable-op": "nondifferentiable",
    "gradient-multiplier": "zero",
    "unread-output": "unused",
    "off-path-layer": "unused",
    "unread-variable": "unused",
    "var-list": "var-list",
    "compile-again": "trainable-changed",
    "safe-log": "nan",
    "double-where": "nan",
    "divide-no-nan": "nan",
    "nan-candidates": "nan",
    "numeric-candidates": "nan",
    "zero-gradient": "zero",
    "dead": "zero",
    "replica-candidates": "replica",
    "compute-average-loss": "replica",
}
GRADSCOPE_STATUS_CAUSES = {
    "none:stopped": "stop-gradient",
    "none:assign": "assign",
    "none:nondifferentiable": "nondifferentiable",
    "none:disconnected": "unused",
    "nan": "nan",
    "zero": "zero",
}
GRADSCOPE_PROBLEM_CAUSES = {"replica-mismatch": "replica", "nan": "nan", "always-zero": "zero"}


@dataclass
class Gradscope:
    """``gradscope run --format json --output FILE PROGRAM``."""

    name: str = "gradscope"
    run: str = "gradscope"
    about: str = (
        "`gradscope run --format json` of the program: its problems, each with the "
        "source's status, cut points and fix"
    )
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "gradscope"])

    def argv(self, program: Path, output: Path) -> list[str]:
        return [*self.command, "run", "--format", "json", "--output", str(output), str(program)]

    def judge(self, run: Finished) -> Verdict:
        try:
            report = json.loads(run.output)
        except ValueError:
            reason = "timed out" if run.code is None else f"no report (exit code {run.code})"
            said = _last_line(run.stderr)
            return Verdict(flagged=False, error=f"{reason}: {said}" if said else reason)
        if run.backend != report.get("backend", "tensorflow") and report.get("calls"):
            # Its gradient calls are another backend's: the program did not run as written.
            return Verdict(flagged=False, error=(
                f"watched the program on Keras' TensorFlow backend, not the {run.backend} "
                "backend it chooses"))  # fmt: skip
        return judge_gradscope(report)


def _last_line(text: str) -> str:
    """The last line a tool said (its one-line refusal or error), shortened."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _source_of(report: Mapping[str, Any], problem: Mapping[str, Any]) -> Mapping[str, Any]:
    for call in report.get("calls", []):
        if call.get("site") == problem.get("site") and call.get("step") == problem.get("step"):
            found: Mapping[str, Any] = call.get("sources", {}).get(problem.get("variable"), {})
            return found
    return {}


def _untracked(report: Mapping[str, Any]) -> set[str]:
    return {
        entry.get("variable", "")
        for call in report.get("calls", [])
        for entry in call.get("untracked", [])
    }


def _cause(problem: Mapping[str, Any], source: Mapping[str, Any], untracked: set[str]) -> str:
    if problem.get("kind") == "never-trained" and problem.get("variable") in untracked:
        return "untracked"
    if problem.get("kind") in GRADSCOPE_PROBLEM_CAUSES:  # a kind that is its own cause
        return GRADSCOPE_PROBLEM_CAUSES[problem["kind"]]
    fix = problem.get("fix") or source.get("fix") or {}
    if fix.get("kind") in GRADSCOPE_FIX_CAUSES:
        return GRADSCOPE_FIX_CAUSES[fix["kind"]]
    return GRADSCOPE_STATUS_CAUSES.get(source.get("status", ""), "")


def _short(where: str) -> str:
    """``FILE:LINE`` with the file's own name (reports may give paths relative to the cwd)."""
    path, _, line = where.rpartition(":")
    return f"{Path(path).name}:{line}" if path else where


def judge_gradscope(report: Mapping[str, Any]) -> Verdict:
    """A gradscope run report as a verdict: its first problem's cause, lines and fix."""
    problems = report.get("problems", [])
    if not problems:
        return Verdict(flagged=False)
    causes: list[str] = []
    lines: list[str] = []
    untracked = _untracked(report)
    for problem in problems:
        source = _source_of(report, problem)
        cause = _cause(problem, source, untracked)
        if cause and cause not in causes:
            causes.append(cause)
        fix = problem.get("fix") or source.get("fix") or {}
        cuts = problem.get("cut_points") or source.get("cut_points") or []
        nan = source.get("nan_origin") or {}
        for where in (fix.get("where", ""), *(c.get("source", "") for c in cuts),
                      nan.get("source", "")):  # fmt: skip
            if where and _short(where) not in lines:
                lines.append(_short(where))
    first = problems[0]
    fix = first.get("fix") or _source_of(report, first).get("fix")
    proposed = None
    if fix:
        edits = fix.get("edits") or ([fix["edit"]] if fix.get("edit") else [])
        proposed = Fix(kind=fix.get("kind", ""), where=_short(fix.get("where", "")),
                       edits=tuple(edits))  # fmt: skip
    return Verdict(flagged=True, causes=tuple(causes), lines=tuple(lines), fix=proposed)


TOOLS: tuple[Tool, ...] = (Gradscope(), KerasWarning(), CheckNumerics(), Naive())
