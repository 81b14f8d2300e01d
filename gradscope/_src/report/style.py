"""Shared wording and colours for the human-readable formats (table, markdown, html)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from gradscope._src.results import report as m
from gradscope._src.results import words
from gradscope._src.results.status import Status

#: Rich styles per status; the table uses them only on a terminal.
STATUS_STYLE: dict[str, str] = {
    m.OK: "green",
    m.ZERO: "yellow",
    m.NAN: "bold red",
    m.DISCONNECTED: "red",
    m.STOPPED: "red",
    m.ASSIGN: "red",
    m.NONDIFFERENTIABLE: "red",
    m.UNEXPLAINED: "bold red",
    m.EXCLUDED: "dim",
    m.FROZEN: "dim",
    Status.UNKNOWN: "yellow",
}


def cell_style(status: str, problem: bool) -> str:
    """A matrix cell's colour: red only for what is wrong (a problem ``check`` fails on, a
    ``nan``); a ``None`` the spec declares (or does not mind) is plain, ``ok`` green, an
    all-zero or unexplained gradient yellow (worth a look), excluded and frozen dim."""
    if problem or status == m.NAN:
        return "bold red"
    if status == m.OK:
        return "green"
    if status in (m.ZERO, m.UNEXPLAINED):
        return "yellow"
    return "dim" if status in (m.EXCLUDED, m.FROZEN) else ""


#: Short cell text per status, for matrices.
SHORT = {
    m.OK: "ok",
    m.ZERO: "zero",
    m.NAN: "nan",
    m.DISCONNECTED: "disconnected",
    m.STOPPED: "stopped",
    m.ASSIGN: "assign",
    m.NONDIFFERENTIABLE: "non-diff",
    m.UNEXPLAINED: "unexplained",
    m.EXCLUDED: "excluded",
    m.FROZEN: "frozen",
    Status.UNKNOWN: "unknown",
}


def number(value: float | None) -> str:
    """Compact scientific form: ``2.68e+00``; ``-`` when absent."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return f"{value:.2e}"


def shape(dims: Iterable[int | None]) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def cell(pair: m.PairResult) -> str:
    """A matrix cell: the status, with the norm when a gradient exists."""
    text = SHORT[pair.status]
    if pair.status in (m.OK,):
        text += f" {number(pair.norm)}"
    if pair.sparse and m.has_gradient(pair.status):
        text += " (sparse)"
    if pair.cut_points and m.has_gradient(pair.status):
        text += " ✂"
    return text


def nan_rows(report: m.Report) -> list[tuple[str, str, str, str]]:
    """``(loss, variable, what appeared where, FILE:LINE)`` for every ``nan`` pair (none for
    a timeline's report: the run recorded no NaN origin; its ``nan`` finding says when)."""
    rows: list[tuple[str, str, str, str]] = []
    if report.route == "timeline":
        return rows
    for loss, pair in report.pairs():
        if pair.status != m.NAN:
            continue
        if pair.nan_origin is None:
            rows.append((loss.name, pair.variable, "not found", ""))
        else:
            origin = pair.nan_origin
            rows.append((loss.name, pair.variable, words.origin_text(origin), origin.source))
    return rows


#: Rich styles per ``--numeric`` verdict.
VERDICT_STYLE: dict[str, str] = {
    m.AGREES: "green",
    m.DIFFERS: "bold red",
    m.EXPECTED_DIFFERENCE: "yellow",
    m.SKIPPED: "dim",
}
_VERDICT_ORDER = (m.DIFFERS, m.EXPECTED_DIFFERENCE, m.SKIPPED, m.AGREES)


def numeric_heading(report: m.Report) -> str:
    """``Finite differences (float64, up to 16 coordinates per variable, 142 evaluations)``."""
    run = report.numeric
    if run is None:
        return "Finite differences"
    return (
        f"Finite differences ({run.dtype or 'own dtypes'}, up to {run.coordinates} coordinates "
        f"per variable, {run.evaluations} evaluations)"
    )


def numeric_rows(report: m.Report) -> list[tuple[str, str, str, str, str, str]]:
    """``(loss, variable, verdict, error / tolerance, coordinates, why)`` per checked pair,
    differences first."""
    rows = []
    for loss, pair in report.pairs():
        result = pair.numeric
        if result is None:
            continue
        c = result.check
        error = "-" if c.max_rel_error is None else f"{c.max_rel_error:.1e} / {c.tolerance:.0e}"
        coordinates = "-" if not c.size else f"{c.coordinates} of {c.size}"
        why = result.reason
        if result.verdict == m.DIFFERS and result.pattern is not None:
            why = f"expect.{loss.name}.numeric lists `{result.pattern.glob}`" + (
                f"; {why}" if why else ""
            )
        rows.append((loss.name, pair.variable, result.verdict, error, coordinates, why))
    return sorted(rows, key=lambda r: _VERDICT_ORDER.index(r[2]))


def numeric_summary(report: m.Report) -> str:
    """``numeric: 11 agree, 1 expected difference`` ('' without ``--numeric``)."""
    counts = Counter(p.numeric.verdict for _, p in report.pairs() if p.numeric is not None)
    if not counts and report.numeric is None:
        return ""
    words = {
        m.AGREES: "agree",
        m.DIFFERS: "differ",
        m.EXPECTED_DIFFERENCE: "expected difference",
        m.SKIPPED: "skipped",
    }
    parts = [f"{counts[v]} {words[v]}" for v in reversed(_VERDICT_ORDER) if counts[v]]
    return f"numeric: {', '.join(parts) or 'nothing to check'}"


def note_rows(report: m.Report) -> list[tuple[str, str]]:
    """``(loss, note)`` for every note: the report's own (loss ``""``), then each loss's."""
    rows = [("", note) for note in report.notes]
    for loss in report.losses:
        rows += [(loss.name, note) for note in loss.notes]
        rows += [(loss.name, f"fix: {loss.fix.sentence()}")] if loss.fix is not None else []
    return rows


def summary(report: m.Report) -> str:
    """``25 pairs: 9 ok, 9 none, 5 excluded, 2 frozen · 1 problem`` (with ``--numeric``:
    ``... · numeric: 8 agree · 1 problem``)."""
    counts: Counter[str] = Counter()
    for _, pair in report.pairs():
        key = "none" if m.is_none(pair.status) else pair.status
        counts[key] += 1
    total = sum(counts.values())
    order = ["ok", "zero", "nan", "none", "excluded", "frozen"]
    parts = [f"{counts[k]} {k}" for k in order if counts[k]]
    failures = len(report.failures)
    known = len(report.problems) - failures
    problems = f"{failures} problem{'s' if failures != 1 else ''}"
    if known:
        problems += f" ({known} known)"
    numeric = numeric_summary(report)
    numeric = f" · {numeric}" if numeric else ""
    pairs = f"{total} pair{'s' if total != 1 else ''}: {', '.join(parts) or 'none'}"
    return f"{pairs}{numeric} · {problems}"


def replica_heading(report: m.Report) -> str:
    """``Per replica (mirrored on CPU:0, CPU:1; the matrix shows their all-reduced sum)``."""
    d = report.distributed
    if d is None:
        return ""
    where = ", ".join(d.devices)
    return (
        f"Per replica ({d.distribution.strategy} on {where}; "
        f"the matrix shows their all-reduced {d.reduced})"
    )


def replica_rows(report: m.Report) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """``(loss, variable, [(cell, status), ...])`` per pair a replica has a gradient for, or
    whose replicas disagree: pairs no replica differentiates read the same in the matrix."""
    rows = []
    for loss, pair in report.pairs():
        statuses = {r.status for r in pair.replicas}
        if not any(m.has_gradient(s) for s in statuses) and len(statuses) < 2:
            continue
        cells = [(replica_cell(r.status, r.norm), str(r.status)) for r in pair.replicas]
        rows.append((loss.name, pair.variable, cells))
    return rows


def replica_cell(status: Status, norm: float | None) -> str:
    """One replica's gradient in a narrow cell: ``ok 1.2e+00``, ``zero``, ``disconnected``."""
    return f"{SHORT[status]} {number(norm)}" if status == m.OK else SHORT[status]
