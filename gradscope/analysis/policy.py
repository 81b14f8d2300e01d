"""The CI policy: which pairs are problems (nan, contradicted ``expect``, never trained)."""

from __future__ import annotations

from collections.abc import Sequence

from gradscope.analysis import model as m
from gradscope.gradients.facts import CutPoint, VariableFacts
from gradscope.spec.model import Expectation, Pattern


def describe_cut(cuts: Sequence[CutPoint]) -> str:
    """``cut at `frozen` (StopGradient), configs/x.yaml:17`` for one or more cut points."""
    parts = [f"`{c.node}` ({c.op}){', ' + c.source if c.source else ''}" for c in cuts]
    return "; ".join(parts)


def why_none(pair: m.PairResult) -> str:
    """Why a pair has no gradient, in one clause."""
    if pair.status == m.DISCONNECTED:
        return "no path leads from it to the loss"
    if pair.status == m.EXCLUDED:
        return "it is outside the loss's `vars`"
    if pair.status == m.FROZEN:
        return "it is not trainable"
    if pair.cut_points:
        return f"every path is cut at {describe_cut(pair.cut_points)}"
    return "TensorFlow returns no gradient and gradscope found no cause"


def _norm(value: float | None) -> str:
    return "nan" if value is None else f"{value:.3g}"


def _line(variable: VariableFacts) -> int:
    tail = variable.source.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 1


def _first(patterns: Sequence[Pattern], name: str) -> Pattern | None:
    return next((p for p in patterns if p.matches(name)), None)


def find_problems(
    spec: str,
    losses: Sequence[m.LossResult],
    variables: Sequence[VariableFacts],
    expect: Sequence[Expectation],
) -> list[m.Problem]:
    """Every problem ``check`` fails on, in a stable order (loss, then variable)."""
    by_name = {v.name: v for v in variables}
    expectations = {e.loss: e for e in expect}
    problems: list[m.Problem] = []
    for loss in losses:
        e = expectations.get(loss.name)
        for pair in loss.pairs:
            problems.extend(_pair_problems(spec, loss, pair, by_name[pair.variable], e))
    problems.extend(_never_trained(spec, losses, variables, expect))
    return problems


def _pair_problems(
    spec: str,
    loss: m.LossResult,
    pair: m.PairResult,
    variable: VariableFacts,
    e: Expectation | None,
) -> list[m.Problem]:
    name, where = pair.variable, _line(variable)
    if pair.status == m.NAN:
        return [
            m.Problem(loss.name, name, m.NAN_PROBLEM,
                      f"`{name}` gets a gradient with NaN or Inf from `{loss.name}`",
                      pair.cut_points, spec, where)
        ]  # fmt: skip
    if e is None:
        return []
    none = _first(e.none, name)
    if none is not None and m.has_gradient(pair.status):
        return [
            m.Problem(loss.name, name, m.UNEXPECTED_CONNECTED,
                      f"`{name}` gets a gradient from `{loss.name}` (norm {_norm(pair.norm)}), "
                      f"but expect.{loss.name}.none lists `{none.glob}`",
                      pair.cut_points, spec, none.pos.line)
        ]  # fmt: skip
    connected = _first(e.connected, name)
    if connected is not None and none is None and pair.status != m.OK:
        why = "an all-zero gradient" if pair.status == m.ZERO else f"no gradient: {why_none(pair)}"
        return [
            m.Problem(loss.name, name, m.UNEXPECTED_NONE,
                      f"`{name}` gets {why} from `{loss.name}`, "
                      f"but expect.{loss.name}.connected lists `{connected.glob}`",
                      pair.cut_points, spec, connected.pos.line)
        ]  # fmt: skip
    return []


def _never_trained(
    spec: str,
    losses: Sequence[m.LossResult],
    variables: Sequence[VariableFacts],
    expect: Sequence[Expectation],
) -> list[m.Problem]:
    declared = [p for e in expect for p in e.none]
    out = []
    for v in variables:
        if not v.trainable or _first(declared, v.name) is not None:
            continue
        pairs = [loss.pair(v.name) for loss in losses]
        if any(m.has_gradient(p.status) for p in pairs):
            continue
        cuts = tuple(dict.fromkeys(c for p in pairs for c in p.cut_points))
        reason = f"; paths are cut at {describe_cut(cuts)}" if cuts else ""
        out.append(
            m.Problem(None, v.name, m.NEVER_TRAINED,
                      f"`{v.name}` is trainable but no loss gives it a gradient{reason}",
                      cuts, spec, _line(v))
        )  # fmt: skip
    return out
