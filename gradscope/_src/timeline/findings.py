"""Findings over a timeline: dead, vanishing, exploding, nan and none gradients; pure functions.

Each detector reads the records of one (site, variable) series in step order and returns at
most one finding, at the first step it holds from. The thresholds are options
(:class:`Thresholds`); their defaults are chosen so that a healthy model produces no finding:

- ``dead``: at least ``dead_fraction`` (90%) of the gradient's elements are exactly zero for
  ``patience`` (3) consecutive records (a dense gradient only: a sparse one, an embedding's,
  is mostly zero by design).
- ``vanishing``: the gradient's norm is below ``vanishing_ratio`` (1e-6) times the variable's
  own norm for ``patience`` consecutive records.
- ``exploding``: the norm is above ``exploding_factor`` (100) times the median of the earlier
  records' norms, once ``warmup`` (3) earlier records exist.
- ``nan``: the gradient holds a NaN or an infinity (the first record that does).
- ``none``: the variable gets no gradient: it stopped getting one, or never got one (records
  marked ``"allowed": true``, a None the run was told to expect, never count).

The Monitor adds the :data:`FLAG_KINDS` itself (``Recorder.notice``): a ``fit()`` whose step
was traced before a ``trainable`` flag changed, with the line that traced it (``traced_at``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gradscope._src.analysis import fixes
from gradscope._src.errors import ArgumentTypeError, ArgumentValueError
from gradscope._src.results import words
from gradscope._src.results.causes import Cause, from_dict
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.facts import NanOrigin
from gradscope._src.results.fix import Fix
from gradscope._src.results.status import decide, has_gradient, is_none, overflow_skipped

#: A ``trainable`` flag that changed after the train step was traced, so the step still trains
#: the variable or leaves it out (the Monitor notices it when a ``fit()`` begins; no detector).
FLAG_KINDS = ("unexpected-connected", "never-trained")
#: A run's other problems a timeline carries when its steps do not show them
#: (``Recorder.keep``): a None gradient it recorded no step of, replicas that disagree.
RUN_KINDS = ("unexpected-none", "replica-mismatch", "moved-without-gradient")
KINDS = ("nan", "exploding", "dead", "vanishing", "none", *FLAG_KINDS, *RUN_KINDS)


def same_kind(kind: str) -> str:
    """The timeline's kind for a run's problem kind: a run's ``unexpected-none`` is what a
    timeline calls ``none``; every other kind is spelled the same."""
    return "none" if kind == "unexpected-none" else kind


@dataclass(frozen=True)
class Thresholds:
    """When a series of records becomes a finding (the module docstring has the rules)."""

    dead_fraction: float = 0.9
    vanishing_ratio: float = 1e-6
    exploding_factor: float = 100.0
    patience: int = 3
    warmup: int = 3

    def __post_init__(self) -> None:
        """Each threshold of the right type and in its range, said before any training.

        Raises:
            ArgumentTypeError: a threshold that is not a number (a ``TypeError`` and a
                ``gradscope.UsageError``).
            ArgumentValueError: one out of its range (``patience=0``, ``dead_fraction=2``).
        """
        who = "gradscope.Thresholds"
        for name, whole, least, above, most in _RANGES:
            value = getattr(self, name)
            takes = _takes(whole, least, above, most)
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            if not number or (whole and not isinstance(value, numbers.Integral)):
                raise ArgumentTypeError(f"{who}: {name} must be {takes}, saw {value!r}")
            low = value > least if above else value >= least
            if not (math.isfinite(value) and low and (most is None or value <= most)):
                raise ArgumentValueError(f"{who}: {name} must be {takes}, saw {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Each threshold: name, whole number, lowest, whether above it (not at it), highest.
_RANGES: tuple[tuple[str, bool, float, bool, float | None], ...] = (
    ("dead_fraction", False, 0.0, True, 1.0),
    ("vanishing_ratio", False, 0.0, True, None),
    ("exploding_factor", False, 1.0, True, None),
    ("patience", True, 1, False, None),
    ("warmup", True, 0, False, None),
)


def _takes(whole: bool, least: float, above: bool, most: float | None) -> str:
    """``a number above 0 and at most 1``, ``a whole number of at least 1``."""
    said = f"{'a whole number' if whole else 'a number'} {'above' if above else 'of at least'} "
    said += f"{least:g}"
    return said + (f" and at most {most:g}" if most is not None else "")


@dataclass(frozen=True)
class Point:
    """One record of one variable: what the detectors read."""

    step: int
    status: str
    norm: float | None
    weight_norm: float | None
    zero_fraction: float | None
    sparse: bool = False
    cause: str = ""  # why there is no gradient, when the front-end knew
    cut_points: tuple[Mapping[str, Any], ...] = ()  # where its path was cut, likewise
    allowed: bool = False  # a None gradient the run was told to expect (--allow-none)
    skipped: bool = False  # a loss scale overflowed: the optimizer skipped this step
    why: Cause | None = None  # the cause itself (the record's ``why``), which its fix is from
    nan_origin: NanOrigin | None = None  # a non-finite gradient: where it first appeared


def find(
    steps: Sequence[Mapping[str, Any]], thresholds: Thresholds | None = None
) -> list[dict[str, Any]]:
    """The findings of a timeline's ``steps``, ordered by step, then site and variable.

    Args:
        steps: step records as in the timeline JSON (``step``, ``site``, ``variables``).
        thresholds: when a series becomes a finding; the defaults when None.

    Returns:
        Findings as in the timeline JSON: ``kind``, ``site``, ``variable``, ``from_step``,
        ``message`` (and for ``none``, the ``cut_points`` the records name).
    """
    limits = thresholds or Thresholds()
    out = []
    for (site, variable), points in series(steps).items():
        for detect in (_nan, _exploding, _dead, _vanishing, _none):
            found = detect(points, limits)
            if found is not None:
                kind, step, message = found
                finding = {
                    "kind": kind,
                    "site": site,
                    "variable": variable,
                    "from_step": step,
                    "message": f"{variable}: {message}",
                }
                cuts = next((p.cut_points for p in points if p.step == step), ())
                if kind == "none" and cuts:
                    finding["cut_points"] = [dict(c) for c in cuts]
                fix = _fix(kind, site, variable, next(p for p in points if p.step == step))
                if fix is not None:
                    finding["fix"] = fix.to_dict()
                out.append(finding)
    return ordered(out)


def ended_line(site: str, findings: Sequence[Mapping[str, Any]], most: int = 3) -> str:
    """The one line a ``fit()`` the Monitor watched ends with when it found something:
    ``gradscope: fit() at train.py:40 found 2 problems: dense/kernel dead from step 40,
    out/bias none from step 1 (monitor.findings has each message and fix)``."""
    named = [f"{f['variable']} {f['kind']} from step {f['from_step']}" for f in findings[:most]]
    more = len(findings) - len(named)
    listed = ", ".join(named) + (f" and {more} more" if more > 0 else "")
    count = f"{len(findings)} problem{'' if len(findings) == 1 else 's'}"
    place = "fit()" if site == "fit" else f"fit() at {site}"
    return (f"gradscope: {place} found {count}: {listed} "
            "(monitor.findings has each message and fix)")  # fmt: skip


def ordered(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``findings`` by step, then site, variable and kind."""
    return sorted(
        findings,
        key=lambda f: (f["from_step"], f["site"], f["variable"], KINDS.index(f["kind"])),
    )


def _fix(kind: str, site: str, variable: str, point: Point) -> Fix | None:
    """A finding's fix, as ``analysis/fixes.py`` decides it from what the record holds."""
    cuts = tuple(
        CutPoint(str(c.get("node", "")), str(c.get("op", "")), str(c.get("kind", "")),
                 str(c.get("source", "")), tuple(c.get("later") or ()))
        for c in point.cut_points
    )  # fmt: skip
    # a None whose record says no more: what the one rule gives a None with nothing known
    status = point.status if is_none(point.status) else str(decide(has_gradient=False))
    context = fixes.Context(status, variable, cuts, site=site, cause=point.why,
                            nan_origin=point.nan_origin if kind == "nan" else None)  # fmt: skip
    return fixes.finding_fix(kind, variable, site, context)


def _origin(found: Any) -> NanOrigin | None:
    """A record's ``nan_origin`` (None: none, or not one this reader knows)."""
    if not isinstance(found, Mapping):
        return None
    fields = ("node", "op", "source", "where", "value", "tf_op")
    return NanOrigin(*(str(found.get(f) or "") for f in fields))


def none_fix(site: str, variable: str, status: str, cause: Cause | None,
             cut_points: Sequence[Mapping[str, Any]]) -> Fix | None:  # fmt: skip
    """The fix of a ``none`` finding no record shows (a step that raised: ``failed.py``),
    decided as a recorded one's is, from its ``cause``."""
    return _fix("none", site, variable, Point(0, status, None, None, None, False, str(cause or ""),
                                              tuple(cut_points), why=cause))  # fmt: skip


def series(steps: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[Point]]:
    """The records of each (site, variable), in step order."""
    out: dict[tuple[str, str], list[Point]] = {}
    for record in sorted(steps, key=lambda r: int(r["step"])):
        for name, v in record.get("variables", {}).items():
            point = Point(
                int(record["step"]),
                str(v.get("status")),
                v.get("norm"),
                v.get("weight_norm"),
                v.get("zero_fraction"),
                bool(v.get("sparse")),
                str(v.get("cause") or ""),
                tuple(v.get("cut_points") or ()),
                v.get("allowed") is True,
                record.get("skipped") is True,
                from_dict(v.get("why")),
                _origin(v.get("nan_origin")),
            )
            out.setdefault((str(record["site"]), name), []).append(point)
    return out


Found = tuple[str, int, str] | None


def _first_run(flags: Sequence[bool], patience: int) -> int | None:
    """The index where the first run of ``patience`` consecutive true flags starts."""
    run = 0
    for i, flag in enumerate(flags):
        run = run + 1 if flag else 0
        if run >= max(patience, 1):
            return i - run + 1
    return None


def _nan(points: Sequence[Point], limits: Thresholds) -> Found:
    """The first non-finite gradient. Under a dynamic loss scale (mixed precision) Keras'
    ``LossScaleOptimizer`` skips a step whose gradients overflow and lowers its scale, so a
    skipped step that a later finite record of the same variable follows is that, not a
    finding; one no finite record follows may be a real NaN, and is one."""
    for i, p in enumerate(points):
        if p.status != "nan":
            continue
        if overflow_skipped(p.status, p.skipped, (q.status for q in points[i + 1 :])):
            continue
        scaled = (
            ", and under the dynamic loss scale (mixed precision) no later recorded step was "
            "finite (the optimizer skipped each one)"
            if p.skipped
            else ""
        )
        if p.nan_origin is not None:  # as ``gradscope run`` says where it first appeared
            said = words.origin_text(p.nan_origin, quoted=True)
            return (
                "nan",
                p.step,
                f"the gradient has a NaN or an infinity from step {p.step}{scaled}: {said}",
            )
        return (
            "nan",
            p.step,
            f"the gradient has a NaN or an infinity from step {p.step}{scaled}: "
            "lower the learning rate or clip gradients (clipnorm=1.0), and look for "
            "log or sqrt of 0, a division by 0 or an overflowing exp; `gradscope inspect` "
            "names the op where it first appears",
        )
    return None


def _exploding(points: Sequence[Point], limits: Thresholds) -> Found:
    median = _RunningMedian()
    for p in points:
        if p.norm is None:
            continue
        if median.count >= limits.warmup:
            middle = median.value()
            if middle > 0 and p.norm > limits.exploding_factor * middle:
                return (
                    "exploding",
                    p.step,
                    f"the gradient norm {p.norm:.3g} at step {p.step} is "
                    f"{_times(p.norm / middle)} its running median {middle:.3g}: lower the "
                    "learning rate or clip gradients (clipnorm=1.0)",
                )
        median.add(p.norm)
    return None


class _RunningMedian:
    """The median of the values added so far, as ``statistics.median`` gives it, in
    O(log n) per value: two heaps, the lower half (negated: a max-heap) and the upper half.
    Taking ``statistics.median`` of a growing list each record made ``check --timeline``
    quadratic (50,000 records: over 20 s)."""

    def __init__(self) -> None:
        self.low: list[float] = []  # negated values of the lower half; len >= len(high)
        self.high: list[float] = []
        self.count = 0

    def add(self, value: float) -> None:
        import heapq

        if self.low and value > -self.low[0]:
            heapq.heappush(self.high, value)
        else:
            heapq.heappush(self.low, -value)
        if len(self.low) > len(self.high) + 1:
            heapq.heappush(self.high, -heapq.heappop(self.low))
        elif len(self.high) > len(self.low):
            heapq.heappush(self.low, -heapq.heappop(self.high))
        self.count += 1

    def value(self) -> float:
        if len(self.low) > len(self.high):
            return -self.low[0]
        return (-self.low[0] + self.high[0]) / 2


def _times(ratio: float) -> str:
    """``1,200×`` or, past a million, ``2.5e+13×``."""
    return f"{ratio:,.0f}×" if ratio < 1e6 else f"{ratio:.2g}×"


def _dead(points: Sequence[Point], limits: Thresholds) -> Found:
    flags = [
        not p.sparse
        and p.status in ("ok", "zero")
        and p.zero_fraction is not None
        and p.zero_fraction >= limits.dead_fraction
        for p in points
    ]
    start = _first_run(flags, limits.patience)
    if start is None:
        return None
    p = points[start]
    share = p.zero_fraction or 0.0
    return (
        "dead",
        p.step,
        f"{share:.0%} of the gradient is exactly zero from step {p.step} "
        f"({limits.patience} records in a row): the units feeding it output 0 for every "
        "input (a dying ReLU) or its path is masked; lower the learning rate, use "
        "LeakyReLU or GELU, or check the bias initialization",
    )


def _vanishing(points: Sequence[Point], limits: Thresholds) -> Found:
    flags = [
        p.status == "ok"
        and p.norm is not None
        and bool(p.weight_norm)
        and p.norm < limits.vanishing_ratio * (p.weight_norm or 0.0)
        for p in points
    ]
    start = _first_run(flags, limits.patience)
    if start is None:
        return None
    p = points[start]
    ratio = (p.norm or 0.0) / (p.weight_norm or 1.0)
    return (
        "vanishing",
        p.step,
        f"the gradient norm is {ratio:.2g} of the weight's own norm from "
        f"step {p.step} (below {limits.vanishing_ratio:g} for {limits.patience} records): it "
        "barely trains; look for saturating activations (sigmoid, tanh), a missing "
        "normalization or residual connection, or a too small loss scale",
    )


def _none(points: Sequence[Point], limits: Thresholds) -> Found:
    had = False
    for p in points:
        if p.status.startswith("none") and not p.allowed:
            why = f"{p.status}, {p.cause}" if p.cause else ""
            if had:
                return (
                    "none",
                    p.step,
                    f"the gradient stopped at step {p.step} (it had one before): "
                    + (why or "a branch or a stop_gradient now cuts its path; `gradscope "
                       "run` names the cut"),
                )  # fmt: skip
            return (
                "none",
                p.step,
                f"no gradient reaches it (from step {p.step}): it never trains; "
                + (why or "`gradscope inspect` or `gradscope run` names where the path is cut"),
            )
        had = had or has_gradient(p.status)
    return None
