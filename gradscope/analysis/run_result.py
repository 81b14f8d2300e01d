"""What ``gradscope run`` found in a program: watched calls, their sources, and the problems.

Plain data (contract section 6); no TensorFlow, no rendering.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope.results import report as m
from gradscope.errors import ExitCode
from gradscope.results.facts import CutPoint

#: ``mode`` of a watched call.
EAGER = "eager"
FUNCTION = "function"
GRAPH = "graph"

#: How the program ended.
FINISHED = "finished"  # ran to its end (or sys.exit(0))
STOPPED = "stopped"  # gradscope stopped it after --steps executions of a site
RAISED = "raised"  # the program raised; exit code 4
INTERRUPTED = "interrupted"  # Ctrl-C; exit code 130


@dataclass(frozen=True)
class SourceResult:
    """One source of one watched call: a variable or a watched tensor."""

    name: str
    status: str
    norm: float | None
    shape: tuple[int | None, ...]
    sparse: bool
    cut_points: tuple[CutPoint, ...] = ()
    note: str = ""  # why, where the cut points cannot say (read before the tape started)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "norm": m.json_number(self.norm),
            "shape": list(self.shape),
            "sparse": self.sparse,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class CallResult:
    """One execution of one watched call site."""

    site: str  # FILE:LINE of the user's call
    api: str  # GradientTape.gradient, tf.gradients, compute_gradients, fit, ...
    mode: str  # eager | function | graph
    step: int  # executions of this site, from 1
    target_source: str  # FILE:LINE of the line that made the target (the loss)
    value: float | None  # the target's value (summed), None when it never ran
    sources: tuple[SourceResult, ...]
    notes: tuple[str, ...] = ()
    loss_scale: float | None = None  # mixed precision: norms are unscaled by it

    def to_dict(self) -> dict[str, Any]:
        target: dict[str, Any] = {"source": self.target_source, "value": m.json_number(self.value)}
        if self.loss_scale is not None:
            target["loss_scale"] = self.loss_scale
        out: dict[str, Any] = {
            "site": self.site,
            "api": self.api,
            "mode": self.mode,
            "step": self.step,
            "target": target,
            "sources": {s.name: s.to_dict() for s in self.sources},
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class RunProblem:
    """A source whose gradient the run fails on: ``unexpected-none`` or ``nan``."""

    site: str
    step: int
    variable: str
    kind: str
    message: str
    cut_points: tuple[CutPoint, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "step": self.step,
            "variable": self.variable,
            "kind": self.kind,
            "message": self.message,
            "cut_points": [c.to_dict() for c in self.cut_points],
        }


@dataclass(frozen=True)
class RunReport:
    """The whole result of ``gradscope run``."""

    program: str
    argv: tuple[str, ...]
    tensorflow: str
    device: str
    calls: tuple[CallResult, ...]
    problems: tuple[RunProblem, ...]
    outcome: str = FINISHED
    steps: int = 1
    notes: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 no problems, 1 problems, 4 the program raised, 130 interrupted."""
        if self.outcome == RAISED:
            return int(ExitCode.PROGRAM_RAISED)
        if self.outcome == INTERRUPTED:
            return int(ExitCode.INTERRUPTED)
        return int(ExitCode.PROBLEMS if self.problems else ExitCode.OK)

    def sites(self) -> Iterator[str]:
        """Every call site, in the order first seen."""
        yield from dict.fromkeys(c.site for c in self.calls)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "gradscope": m.REPORT_VERSION,
            "program": self.program,
            "argv": list(self.argv),
            "tensorflow": self.tensorflow,
            "device": self.device,
            "outcome": self.outcome,
            "calls": [c.to_dict() for c in self.calls],
            "problems": [p.to_dict() for p in self.problems],
        }
        if self.notes:
            out["notes"] = list(self.notes)
        out.update(self.extra)
        return out


def problems_of(calls: Sequence[CallResult], allow_none: Sequence[str]) -> list[RunProblem]:
    """``unexpected-none`` for a source with no gradient unless an ``--allow-none`` glob names
    it, ``nan`` for a non-finite gradient; one problem per site, source and kind (its first
    step)."""
    seen: dict[tuple[str, str, str], RunProblem] = {}
    for call in calls:
        for s in call.sources:
            kind = _kind(s, allow_none)
            key = (call.site, s.name, kind or "")
            if kind is None or key in seen:
                continue
            seen[key] = RunProblem(call.site, call.step, s.name, kind, _message(call, s, kind),
                                   s.cut_points)  # fmt: skip
    return list(seen.values())


def _kind(source: SourceResult, allow_none: Sequence[str]) -> str | None:
    if source.status == m.NAN:
        return m.NAN_PROBLEM
    if m.is_none(source.status):
        if any(fnmatch.fnmatchcase(source.name, p) for p in allow_none):
            return None
        return m.UNEXPECTED_NONE
    return None


def _message(call: CallResult, source: SourceResult, kind: str) -> str:
    if kind == m.NAN_PROBLEM:
        return f"{source.name} gets a NaN or infinite gradient at {call.site} (step {call.step})"
    why = source.status.removeprefix("none:")
    text = f"{call.api} at {call.site} gives {source.name} no gradient ({why})"
    if source.cut_points:
        cut = source.cut_points[0]
        text += f": cut at {cut.node} ({cut.op}) at {cut.source or 'unknown line'}"
    elif source.note:
        text += f": {source.note}"
    return text
