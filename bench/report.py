"""The benchmark's results as Markdown, each goal with its measured number and verdict."""

from __future__ import annotations

import datetime
from typing import Any

GOAL_WALL = 1.10
GOAL_RSS = 1.2
GOAL_NAIVE = 1.0  # no slower than the naive eager loop on every model
GOAL_HEAVY = 1.3  # and this much faster on the compute-heavy ones
HEAVY = ("resnet50", "mlp100b256")
#: Pairs of models, the second 10x the nodes of the first.
LINEAR = (
    ("chain1000", "chain10000", "1,000 -> 10,000 nodes"),
    ("many100x50", "many1000x50", "100 -> 1,000 variables (200 -> 2,000 nodes), 50 losses"),
)
GOAL_LINEAR = 11.0
GOAL_DIAMONDS = 1.0
GOAL_HELP = 1.5


def _verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def render(
    *,
    machine: str,
    device: str,
    runs: int,
    results: dict[str, tuple[Any, dict[str, Any]]],
    startup: dict[str, float],
    diamonds: float,
) -> str:
    today = datetime.date.today().isoformat()
    lines = [
        "# Benchmark results",
        "",
        f"Run {today} with `make bench` (`--device {device}`, {runs} runs per way, alternating; "
        "medians). Machine: " + machine + ".",
        "",
        "Whole processes, start to exit: `gradscope inspect --format json` against a plain "
        "TensorFlow script computing the same per-loss gradients the fastest way (one "
        "`tf.function`, one forward pass under a persistent tape, one `tape.gradient` per loss, "
        "norms fetched), and the naive eager loop (a new tape and forward pass per loss). "
        "The physical limit is `python -c 'import tensorflow'` plus the compute, measured: the "
        "bare function's second run in its own process (one forward pass and one backward "
        "pass per loss, already traced and optimized).",
        "",
        "| model | gradscope s | bare s | time ratio | gradscope MB | bare MB | memory ratio "
        "| naive s | naive MB | naive / gradscope | limit s | gradscope / limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    goals: list[tuple[str, str, bool]] = []
    notes: list[str] = []
    for name, (model, s) in results.items():
        g, b, n = s["gradscope"], s["bare"], s["naive"]
        wall = g.median_wall / b.median_wall
        rss = g.median_rss / b.median_rss
        naive = (
            f"{n.median_wall:.2f} | {n.median_rss:.0f} | {n.median_wall / g.median_wall:.2f}x"
            if n.wall
            else "- | - | -"
        )
        limit = startup["tensorflow"] + s["limit"].median_wall if s["limit"].wall else None
        near = f"{limit:.2f} | {g.median_wall / limit:.2f}x" if limit else "- | -"
        lines.append(
            f"| {name}: {model.what} | {g.median_wall:.2f} | {b.median_wall:.2f} | {wall:.3f} "
            f"| {g.median_rss:.0f} | {b.median_rss:.0f} | {rss:.3f} | {naive} | {near} |"
        )
        goals.append((f"{name}: time <= {GOAL_WALL}x bare", f"{wall:.3f}x", wall <= GOAL_WALL))
        goals.append((f"{name}: memory <= {GOAL_RSS}x bare", f"{rss:.3f}x", rss <= GOAL_RSS))
        if n.wall:
            speedup = n.median_wall / g.median_wall
            goal = GOAL_HEAVY if name in HEAVY else GOAL_NAIVE
            goals.append(
                (
                    f"{name}: naive loop / gradscope >= {goal}x",
                    f"{speedup:.2f}x",
                    speedup >= goal,
                )
            )
    for small_name, large_name, what in LINEAR:
        if small_name in results and large_name in results:
            goals.append(_linear(results[small_name][1], results[large_name][1], what, startup))
    goals.append(
        (
            f"cut-point analysis, chain of 200 diamonds < {GOAL_DIAMONDS} s",
            f"{diamonds * 1000:.1f} ms",
            diamonds < GOAL_DIAMONDS,
        )
    )
    help_ratio = startup["help"] / startup["baseline"]
    goals.append(
        (
            f"`gradscope --help` <= {GOAL_HELP}x `python -c 'import click, rich, yaml'`",
            f"{help_ratio:.2f}x ({startup['help'] * 1000:.0f} ms "
            f"vs {startup['baseline'] * 1000:.0f} ms)",
            help_ratio <= GOAL_HELP,
        )
    )
    lines += ["", "## Goals", "", "| goal | measured | verdict |", "|---|---|---|"]
    lines += [f"| {goal} | {value} | {_verdict(ok)} |" for goal, value, ok in goals]
    lines += [
        "",
        f"`gradscope validate configs/multitask.yaml` (no TensorFlow): "
        f"{startup['validate'] * 1000:.0f} ms; `python -c 'import tensorflow'`: "
        f"{startup['tensorflow']:.2f} s.",
        "",
    ]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    return "\n".join(lines)


def _linear(
    small: dict[str, Any], large: dict[str, Any], what: str, startup: dict[str, float]
) -> tuple[str, str, bool]:
    floor = startup["tensorflow"]

    def beyond(way: str) -> float:
        return (large[way].median_wall - floor) / (small[way].median_wall - floor)

    growth, bare_growth = beyond("gradscope"), beyond("bare")
    return (
        f"{what} costs <= {GOAL_LINEAR}x beyond the import",
        f"{growth:.2f}x (bare TensorFlow: {bare_growth:.2f}x)",
        growth <= GOAL_LINEAR,
    )
