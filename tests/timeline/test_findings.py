"""Findings are pure functions of the recorded series: each rule, its threshold, its first step."""

from __future__ import annotations

from typing import Any

from gradscope._src.timeline.findings import Thresholds, find


def _steps(values: list[dict[str, Any]], name: str = "dense/kernel") -> list[dict[str, Any]]:
    base = {"status": "ok", "norm": 1.0, "weight_norm": 10.0, "zero_fraction": 0.0}
    return [
        {
            "step": 10 * (i + 1),
            "site": "train.py:9",
            "loss": 1.0,
            "variables": {name: {**base, **v}},
        }
        for i, v in enumerate(values)
    ]


def _kinds(steps: list[dict[str, Any]], **limits: Any) -> list[tuple[str, int]]:
    return [(f["kind"], f["from_step"]) for f in find(steps, Thresholds(**limits))]


def test_find_healthy_series_has_no_finding() -> None:
    norms = [1.0, 0.8, 1.3, 0.5, 0.9, 2.0, 0.7, 0.3, 0.2, 0.25]
    assert find(_steps([{"norm": n, "zero_fraction": 0.3} for n in norms])) == []


def test_find_dead_needs_patience_consecutive_records() -> None:
    flickering = [{"zero_fraction": z} for z in (0.95, 0.95, 0.1, 0.95, 0.95, 0.2)]
    assert _kinds(_steps(flickering)) == []
    dying = [{"zero_fraction": z} for z in (0.2, 0.5, 0.92, 0.97)] + [
        {"status": "zero", "norm": 0.0, "zero_fraction": 1.0}
    ]
    assert _kinds(_steps(dying)) == [("dead", 30)]
    assert _kinds(_steps(dying), dead_fraction=0.99) == []
    assert _kinds(_steps(dying), patience=2) == [("dead", 30)]


def test_find_dead_ignores_sparse_gradients() -> None:
    rows = [{"zero_fraction": 0.99, "sparse": True}] * 5
    assert _kinds(_steps(rows)) == []


def test_find_vanishing_is_relative_to_the_weight_norm() -> None:
    rows = [{"norm": n} for n in (1.0, 1e-3, 5e-6, 5e-6, 5e-6)]
    assert _kinds(_steps(rows)) == [("vanishing", 30)]  # 5e-6 / 10 = 5e-7 < 1e-6
    assert _kinds(_steps(rows), vanishing_ratio=1e-7) == []
    zero_weight = [{"norm": 1e-9, "weight_norm": 0.0}] * 4  # a zero-initialised bias: no ratio
    assert _kinds(_steps(zero_weight)) == []


def test_find_exploding_against_the_running_median() -> None:
    rows = [{"norm": n} for n in (1.0, 2.0, 1.5, 120.0, 1e4)]
    found = find(_steps(rows))
    assert [(f["kind"], f["from_step"]) for f in found] == [("exploding", 50)]
    assert "1e+04" in found[0]["message"] and "clip" in found[0]["message"]
    assert _kinds(_steps(rows), exploding_factor=50) == [("exploding", 40)]
    assert _kinds(_steps(rows[:1] + rows[3:])) == []  # warm-up: three earlier records first


def test_find_nan_and_exploding_order() -> None:
    rows = [{"norm": n} for n in (1.0, 1.0, 1.0, 1e6)] + [{"status": "nan", "norm": None}]
    found = find(_steps(rows))
    assert [(f["kind"], f["from_step"], f["variable"]) for f in found] == [
        ("exploding", 40, "dense/kernel"),
        ("nan", 50, "dense/kernel"),
    ]
    assert found[1]["message"].startswith("dense/kernel: the gradient has a NaN")
    assert found[1]["site"] == "train.py:9"


def test_find_nan_of_a_step_the_loss_scale_skipped() -> None:
    """Mixed precision: Keras' LossScaleOptimizer skips a step whose gradients overflow and
    lowers its scale. A skipped step that a finite record follows is not a finding; one that
    none follows may be a real NaN; an unskipped NaN is one even if finite records follow (a
    NaN already applied, say to one embedding row)."""
    nan = {"status": "nan", "norm": None}
    steps = _steps([{}, nan, nan, {}, {}])
    for record in steps[1:3]:
        record["skipped"] = True
    assert find(steps) == []
    stuck = _steps([{}, nan, nan])
    for record in stuck[1:]:
        record["skipped"] = True
    found = find(stuck)
    assert [(f["kind"], f["from_step"]) for f in found] == [("nan", 20)]
    assert "no later recorded step was finite" in found[0]["message"]
    assert _kinds(_steps([{}, nan, {}])) == [("nan", 20)]  # not skipped: a finding


def test_find_none_stopped_and_never() -> None:
    stopped = [{}, {}, {"status": "none:unexplained", "norm": None, "zero_fraction": None}]
    found = find(_steps(stopped))
    assert [(f["kind"], f["from_step"]) for f in found] == [("none", 30)]
    assert "stopped" in found[0]["message"]
    never = [{"status": "none:stopped", "norm": None, "zero_fraction": None}] * 2
    found = find(_steps(never))
    assert [(f["kind"], f["from_step"]) for f in found] == [("none", 10)]
    assert "never" in found[0]["message"]


def test_find_no_none_for_records_marked_allowed() -> None:
    none = {"status": "none:stopped", "norm": None, "zero_fraction": None}
    assert find(_steps([{**none, "allowed": True}] * 3)) == []
    later = [{}, {**none, "allowed": True}, none]  # an unmarked record still counts
    assert _kinds(_steps(later)) == [("none", 30)]
    assert _kinds(_steps([{}, {**none, "allowed": "yes"}])) == [("none", 20)]  # true only


def test_find_no_vanishing_from_a_zero_weight_norm() -> None:
    zero = [{"norm": 1e-9, "weight_norm": 0.0}] * 4  # a zero-initialised bias, before updates
    assert find(_steps(zero)) == []


def test_thresholds_to_dict_lists_the_defaults() -> None:
    assert Thresholds().to_dict() == {
        "dead_fraction": 0.9,
        "vanishing_ratio": 1e-6,
        "exploding_factor": 100.0,
        "patience": 3,
        "warmup": 3,
    }


def test_find_exploding_median_is_statistics_median_and_linear() -> None:
    """The running median is Python's own ``statistics.median`` of the earlier norms, and
    finding it no longer sorts every earlier record at each one (50,000 records: over 20 s
    before, quadratic)."""
    import random
    import statistics
    import time

    from gradscope._src.timeline.findings import _RunningMedian

    rng = random.Random(0)
    median, seen = _RunningMedian(), []
    for _ in range(500):
        value = rng.choice([rng.random(), float(rng.randint(0, 3)), 0.0, 1e30])
        median.add(value)
        seen.append(value)
        assert median.value() == statistics.median(seen)
    steps = _steps([{"norm": 1.0 + (i % 7) * 0.1} for i in range(50_000)])
    start = time.process_time()
    assert find(steps) == []
    assert time.process_time() - start < 8.0  # ~0.6 s here; the quadratic one took 20+
