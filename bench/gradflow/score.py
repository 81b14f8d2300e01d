"""Scores of each tool over the set, and the Markdown table: pure functions of plain data.

A result row (one program, from ``results.json``) holds the case's labels, the statuses bare
TensorFlow showed (``truth``) and per tool its verdict and seconds. Nothing here runs a program.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Row = Mapping[str, Any]
BROKEN = ("none", "nan", "zero", "untrained")


def truth_agrees(row: Row) -> bool:
    """The buggy program shows its labelled effect; its fixed twin recorded its gradients and
    shows none of them."""
    seen = set(row["truth"])
    if row["role"] == "buggy":
        return row["effect"] in seen
    return bool(seen) and not seen & set(BROKEN)


def line_right(row: Row, verdict: Mapping[str, Any]) -> bool:
    """The tool's main line is one of the labelled lines of the buggy program."""
    lines = verdict.get("lines") or []
    wanted = {f"{row['file']}:{line}" for line in row["lines"]}
    return bool(verdict.get("flagged")) and bool(lines) and lines[0] in wanted


def cause_right(row: Row, verdict: Mapping[str, Any]) -> bool:
    causes = verdict.get("causes") or []
    return bool(verdict.get("flagged")) and bool(causes) and causes[0] == row["cause"]


def fix_right(row: Row, verdict: Mapping[str, Any]) -> bool:
    """An applied edit that made the program correct, or (no edit) the labelled fix kind at a
    labelled line."""
    fix = verdict.get("fix")
    if not verdict.get("flagged") or not fix:
        return False
    if "applied" in fix:
        return bool(fix["applied"])
    wanted = {f"{row['file']}:{line}" for line in row["lines"]}
    return fix.get("kind") in row["fixes"] and fix.get("where") in wanted


@dataclass(frozen=True)
class Score:
    """One tool over the set."""

    tool: str
    buggy: int
    fixed: int
    detected: int
    false_alarms: int
    causes: int
    lines: int
    fixes: int
    fixes_applied: int
    errors: int
    median_seconds: float  # wall time per program, under the machine's load
    total_seconds: float
    median_cpu: float  # CPU seconds per program (user + system)
    cpu_ratio: float  # median over programs of CPU seconds / the plain run's CPU seconds

    @property
    def recall(self) -> float:
        return self.detected / self.buggy if self.buggy else 0.0

    @property
    def precision(self) -> float | None:
        flagged = self.detected + self.false_alarms
        return self.detected / flagged if flagged else None


def score(rows: Sequence[Row], tool: str) -> Score:
    """``tool`` over ``rows`` (the programs it was run on: buggy and fixed)."""
    buggy = [r for r in rows if r["role"] == "buggy" and tool in r["verdicts"]]
    fixed = [r for r in rows if r["role"] == "fixed" and tool in r["verdicts"]]
    ran = (*buggy, *fixed)
    seconds = [r["verdicts"][tool]["seconds"] for r in ran]
    cpu = [r["verdicts"][tool].get("cpu_seconds", 0.0) for r in ran]
    ratios = [
        r["verdicts"][tool].get("cpu_seconds", 0.0) / r["plain"]["cpu_seconds"]
        for r in ran
        if r.get("plain", {}).get("cpu_seconds")
    ]
    return Score(
        tool=tool,
        buggy=len(buggy),
        fixed=len(fixed),
        detected=sum(bool(r["verdicts"][tool]["flagged"]) for r in buggy),
        false_alarms=sum(bool(r["verdicts"][tool]["flagged"]) for r in fixed),
        causes=sum(cause_right(r, r["verdicts"][tool]) for r in buggy),
        lines=sum(line_right(r, r["verdicts"][tool]) for r in buggy),
        fixes=sum(fix_right(r, r["verdicts"][tool]) for r in buggy),
        fixes_applied=sum("applied" in (r["verdicts"][tool].get("fix") or {}) for r in buggy),
        errors=sum(bool(r["verdicts"][tool].get("error")) for r in (*buggy, *fixed)),
        median_seconds=statistics.median(seconds) if seconds else 0.0,
        total_seconds=sum(seconds),
        median_cpu=statistics.median(cpu) if cpu else 0.0,
        cpu_ratio=statistics.median(ratios) if ratios else 0.0,
    )


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "-"


def table(scores: Sequence[Score], gives: Mapping[str, set[str]]) -> str:
    """The main table; ``gives`` says per tool which of cause, line, fix it can give at all."""
    out = [
        "| tool | detected (recall) | precision | false alarms on fixed twins "
        "| cause right | line right | fix right | errors | CPU s per program (x plain) "
        "| wall s per program |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        precision = "-" if s.precision is None else f"{s.precision:.2f}"

        def given(what: str, count: int, s: Score = s) -> str:
            return _share(count, s.buggy) if what in gives.get(s.tool, set()) else "gives none"

        out.append(
            f"| {s.tool} | {_share(s.detected, s.buggy)} | {precision} "
            f"| {_share(s.false_alarms, s.fixed)} | {given('cause', s.causes)} "
            f"| {given('line', s.lines)} | {given('fix', s.fixes)} | {s.errors} "
            f"| {s.median_cpu:.1f} ({s.cpu_ratio:.2f}x) | {s.median_seconds:.1f} |"
        )
    return "\n".join(out)


def by_kind(rows: Sequence[Row], tools: Sequence[str], kinds: Sequence[str]) -> str:
    """Recall per kind of program (buggy programs detected / buggy programs)."""
    out = ["| kind | programs | " + " | ".join(tools) + " |", "|---|---|" + "---|" * len(tools)]
    for kind in kinds:
        buggy = [r for r in rows if r["role"] == "buggy" and r["kind"] == kind]
        if not buggy:
            continue
        cells = []
        for tool in tools:
            ran = [r for r in buggy if tool in r["verdicts"]]
            hits = sum(bool(r["verdicts"][tool]["flagged"]) for r in ran)
            cells.append(f"{hits}/{len(ran)}" if ran else "-")
        out.append(f"| {kind} | {len(buggy)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _mark(row: Row, verdict: Mapping[str, Any] | None) -> str:
    if verdict is None:
        return "skipped"
    if verdict.get("error"):
        return "error"
    if row["role"] == "fixed":
        return "false alarm" if verdict.get("flagged") else "quiet"
    if not verdict.get("flagged"):
        return "missed"
    parts = ["found"]
    parts += ["cause"] if cause_right(row, verdict) else []
    parts += ["line"] if line_right(row, verdict) else []
    parts += ["fix"] if fix_right(row, verdict) else []
    return ", ".join(parts)


def per_program(rows: Sequence[Row], tools: Sequence[str]) -> str:
    """One line per program: the truth, and what each tool made of it."""
    out = [
        "| program | kind | truth | " + " | ".join(tools) + " |",
        "|---|---|---|" + "---|" * len(tools),
    ]
    for row in rows:
        seen = set(row["truth"])
        truth = ", ".join(sorted(seen - {"ok", "unknown"}))
        # "unknown": a TensorFlow 1 graph's None-ness only (its values were never read)
        if not truth:
            truth = "ok" if "ok" in seen else "no None (graph only)" if seen else "nothing recorded"
        if not truth_agrees(row):
            truth += " (disagrees with its label)"
        cells = [_mark(row, row["verdicts"].get(tool)) for tool in tools]
        out.append(f"| `{row['file']}` | {row['kind']} | {truth} | " + " | ".join(cells) + " |")
    return "\n".join(out)
