"""The JSON reports (contract section 5): every result's JSON shape, stable keys, no NaN.

This module owns serialization: result types are plain data, and their public ``to_dict()``
(contract section 3) hands them here. The shapes of ``check``'s report are described in
``analysis/check.py``; ``schema/`` holds the JSON Schemas of all of them.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gradscope.analysis.check import CheckResult
from gradscope.analysis.diff import REACHES, Diff, DiffReport, VariableDiff
from gradscope.analysis.diff_matrix import DiffMatrix
from gradscope.results import report as m
from gradscope.results import run as rr
from gradscope.results.facts import CutPoint, NanOrigin, NumericRun
from gradscope.results.fix import Fix
from gradscope.results.replicas import DistributedFacts, ReplicaResult

REPORT_VERSION = m.REPORT_VERSION


def dumps(data: Any) -> str:
    """``data`` as indented JSON ending with a newline; NaN is refused (it is not JSON)."""
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render(result: Any, *, color: bool = False, width: int = 120) -> str:
    """Any result object as its JSON report."""
    return dumps(to_json(result))


def to_json(result: Any) -> dict[str, Any]:
    """The JSON report of a ``Report``, ``CheckResult``, ``DiffReport``, ``DiffMatrix`` or
    ``RunReport``."""
    if isinstance(result, m.Report):
        return report(result)
    if isinstance(result, CheckResult):
        return check(result)
    if isinstance(result, DiffReport):
        return {**report(result.report), "diff": diff(result.diff)}
    if isinstance(result, DiffMatrix):
        return matrix(result)
    if isinstance(result, rr.RunReport):
        return run_report(result)
    raise TypeError(f"no JSON report for {type(result).__name__}")


def number(value: float | None) -> float | None:
    """``value`` for JSON, which has no NaN or Infinity: those become null."""
    return value if value is not None and math.isfinite(value) else None


def cut_point(c: CutPoint) -> dict[str, Any]:
    """A cut point; ``later`` (only when there are some) lists the places further on the same
    path that lose the gradient again."""
    return c.to_dict()


def fix(f: Fix | None) -> dict[str, Any] | None:
    """What to change so the gradient flows (``analysis/fixes.py``)."""
    return None if f is None else f.to_dict()


def nan_origin(o: NanOrigin) -> dict[str, str]:
    return {"node": o.node, "op": o.op, "source": o.source, "where": o.where,
            "value": o.value, "tf_op": o.tf_op}  # fmt: skip


def numeric_run(n: NumericRun) -> dict[str, object]:
    return {"dtype": n.dtype, "coordinates": n.coordinates, "evaluations": n.evaluations}


def numeric(result: m.NumericResult) -> dict[str, Any]:
    c = result.check
    return {
        "verdict": str(result.verdict),
        "max_rel_error": c.max_rel_error,
        "tolerance": c.tolerance,
        "coordinates": c.coordinates,
        "size": c.size,
        "step": c.step,
        "dtype": c.dtype,
        "worst": list(c.worst) if c.worst is not None else None,
        "analytic": c.analytic,
        "numeric": c.numeric,
        "reason": result.reason or None,
        "expected_agreement": result.pattern is not None,
    }


def pair(p: m.PairResult) -> dict[str, Any]:
    """A pair; ``nan_origin`` on every ``nan`` pair (null when it could not be found),
    ``numeric`` on every ``ok`` pair of a ``--numeric`` run."""
    out: dict[str, Any] = {
        "status": str(p.status),
        "norm": p.norm,
        "shape": list(p.shape),
        "sparse": p.sparse,
        "cut_points": [cut_point(c) for c in p.cut_points],
    }
    if p.status == m.NAN:
        out["nan_origin"] = nan_origin(p.nan_origin) if p.nan_origin else None
    if p.numeric is not None:
        out["numeric"] = numeric(p.numeric)
    if p.replicas:
        out["replicas"] = [replica(r) for r in p.replicas]
    if p.fix is not None:
        out["fix"] = fix(p.fix)
    return out


def replica(r: ReplicaResult) -> dict[str, Any]:
    """One replica's gradient of a pair (``--strategy``, contract section 8)."""
    return {"replica": r.replica, "status": str(r.status), "norm": r.norm}


def distribution(d: DistributedFacts) -> dict[str, Any]:
    """How a ``--strategy`` run was distributed: the strategy, its replicas' devices, and
    how many rows of each input every replica got."""
    return {
        "strategy": d.distribution.strategy,
        "replicas": d.distribution.replicas,
        "devices": list(d.devices),
        "shards": {name: list(rows) for name, rows in d.shards},
        "reduced": d.reduced,
    }


def loss(result: m.LossResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "value": number(result.value),
        "variables": {p.variable: pair(p) for p in result.pairs},
    }
    if result.notes:
        out["notes"] = list(result.notes)
    if result.fix is not None:
        out["fix"] = fix(result.fix)
    return out


def problem(p: m.Problem) -> dict[str, Any]:
    return {
        "loss": p.loss,
        "variable": p.variable,
        "kind": str(p.kind),
        "message": p.message,
        "cut_points": [cut_point(c) for c in p.cut_points],
        "spec": p.spec,
        "source": f"{p.spec}:{p.line}",
        "known": p.known,
        **({"fix": fix(p.fix)} if p.fix is not None else {}),
    }


def header(r: m.Report) -> dict[str, Any]:
    return {"gradscope": REPORT_VERSION, "spec": r.spec, "name": r.name,
            "tensorflow": r.tensorflow, "device": r.device}  # fmt: skip


def report(r: m.Report) -> dict[str, Any]:
    """The inspect report: ``problems`` holds what ``check`` fails on; problems a baseline
    already holds go to ``known_problems`` (present only when there are any)."""
    out = header(r)
    out["losses"] = {x.name: loss(x) for x in r.losses}
    out["problems"] = [problem(p) for p in r.failures]
    out["route"] = r.route
    out["variables"] = {
        v.name: {
            "shape": list(v.shape),
            "dtype": v.dtype,
            "trainable": v.trainable,
            "source": v.source,
        }
        for v in r.variables
    }
    if r.known:
        out["known_problems"] = [problem(p) for p in r.known]
    if r.notes:
        out["notes"] = list(r.notes)
    if r.numeric is not None:
        out["numeric"] = numeric_run(r.numeric)
    if r.distributed is not None:
        out["distribution"] = distribution(r.distributed)
    return out


def check(result: CheckResult) -> dict[str, Any]:
    """One spec: its report plus ``check``; several: every report under ``reports``."""
    if len(result.reports) == 1:
        out = report(result.reports[0])
        out.setdefault("known_problems", [])
        out["check"] = result.summary()
        return out
    first = result.reports[0] if result.reports else None
    return {
        "gradscope": REPORT_VERSION,
        "specs": [r.spec for r in result.reports],
        "tensorflow": first.tensorflow if first else None,
        "device": first.device if first else None,
        "reports": [report(r) for r in result.reports],
        "problems": [problem(p) for p in result.failures],
        "known_problems": [problem(p) for p in result.known],
        "check": result.summary(),
    }


def variable_diff(v: VariableDiff) -> dict[str, Any]:
    return {
        "reach": v.reach,
        "status_a": str(v.a.status),
        "status_b": str(v.b.status),
        "norm_a": v.a.norm,
        "norm_b": v.b.norm,
        "sparse_a": v.a.sparse,
        "sparse_b": v.b.sparse,
        "cosine": v.cosine,
        "sign_agreement": v.sign_agreement,
        "norm_ratio": v.norm_ratio,
        "dot": v.dot,
        "explanation": v.explanation,
        "cut_points": [cut_point(c) for c in v.cut_points],
    }


def diff(d: Diff) -> dict[str, Any]:
    return {
        "loss_a": d.loss_a,
        "loss_b": d.loss_b,
        "cosine": d.cosine,
        "reach": {r: list(d.names(r)) for r in REACHES},
        "conflicts": [v.variable for v in d.conflicts],
        "left_out": list(d.left_out),
        "variables": {v.variable: variable_diff(v) for v in d.variables},
    }


def matrix(result: DiffMatrix) -> dict[str, Any]:
    out = header(result.report)
    out["losses"] = {x.name: {"value": number(x.value)} for x in result.report.losses}
    out["matrix"] = {a: {b: result.cosine(a, b) for b in result.losses} for a in result.losses}
    out["conflicts"] = [
        {"loss_a": d.loss_a, "loss_b": d.loss_b, "cosine": d.cosine} for d in result.conflicts
    ]
    out["pairs"] = [diff(d) for d in result.diffs]
    return out


def source(s: rr.SourceResult) -> dict[str, Any]:
    """One source of a watched call (``gradscope run``)."""
    out: dict[str, Any] = {
        "status": str(s.status),
        "norm": number(s.norm),
        "shape": list(s.shape),
        "sparse": s.sparse,
        "cut_points": [cut_point(c) for c in s.cut_points],
    }
    if s.note:
        out["note"] = s.note
    if s.nan_origin is not None:
        out["nan_origin"] = nan_origin(s.nan_origin)
    if s.trainable_changed:
        out["trainable_changed"] = True
    if s.replicas:
        out["replicas"] = [replica(r) for r in s.replicas]
    if s.fix is not None:
        out["fix"] = fix(s.fix)
    return out


def call(c: rr.CallResult) -> dict[str, Any]:
    target: dict[str, Any] = {"source": c.target_source, "value": number(c.value)}
    if c.loss_scale is not None:
        target["loss_scale"] = c.loss_scale
    if c.replica_values:
        target["replicas"] = [number(v) for v in c.replica_values]
    out: dict[str, Any] = {
        "site": c.site,
        "api": c.api,
        "mode": c.mode,
        "step": c.step,
        "target": target,
        "sources": {s.name: source(s) for s in c.sources},
    }
    if c.via:
        out["via"] = list(c.via)
    if c.notes:
        out["notes"] = list(c.notes)
    return out


def run_problem(p: rr.RunProblem) -> dict[str, Any]:
    return {
        "site": p.site,
        "step": p.step,
        "variable": p.variable,
        "kind": str(p.kind),
        "message": p.message,
        "cut_points": [cut_point(c) for c in p.cut_points],
        **({"via": list(p.via)} if p.via else {}),
        **({"fix": fix(p.fix)} if p.fix is not None else {}),
    }


def run_report(r: rr.RunReport) -> dict[str, Any]:
    """The report of ``gradscope run`` (contract section 6)."""
    out: dict[str, Any] = {
        "gradscope": REPORT_VERSION,
        "program": r.program,
        **({"entry": r.entry} if r.entry != rr.RUN else {}),
        "argv": list(r.argv),
        "tensorflow": r.tensorflow,
        "device": r.device,
        "outcome": r.outcome,
        **({"exit_status": r.exit_status} if r.exit_status is not None else {}),
        **({"signal": r.signal} if r.signal is not None else {}),
        "calls": [call(c) for c in r.calls],
        "problems": [run_problem(p) for p in r.problems],
    }
    if r.notes:
        out["notes"] = list(r.notes)
    if r.stop is not None:
        out["stop"] = {"site": r.stop.site, "steps": r.steps, "sites": list(r.stop.sites),
                       "refused": r.stop.refused, "caught": r.stop.caught,
                       "finished": r.stop.finished}  # fmt: skip
    if r.distribution is not None:
        d = r.distribution
        out["distribution"] = {"strategy": d.strategy, "replicas": d.replicas,
                               "devices": list(r.devices)}  # fmt: skip
    return out
