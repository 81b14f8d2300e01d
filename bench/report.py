"""The benchmark's results as Markdown, each goal with its measured number and verdict."""

from __future__ import annotations

import datetime
from typing import Any

GOAL_WALL = 1.15
GOAL_RSS = 1.2
GOAL_NAIVE = 1.5
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
        "norms fetched), and the naive eager loop (a new tape and forward pass per loss).",
        "",
        "| model | gradscope s | bare s | time ratio | gradscope MB | bare MB | memory ratio "
        "| naive s | naive / gradscope |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    goals: list[tuple[str, str, bool]] = []
    notes: list[str] = []
    for name, (model, s) in results.items():
        g, b, n = s["gradscope"], s["bare"], s["naive"]
        wall = g.median_wall / b.median_wall
        rss = g.median_rss / b.median_rss
        naive = f"{n.median_wall:.2f} | {n.median_wall / g.median_wall:.2f}x" if n.wall else "- | -"
        lines.append(
            f"| {name}: {model.what} | {g.median_wall:.2f} | {b.median_wall:.2f} | {wall:.3f} "
            f"| {g.median_rss:.0f} | {b.median_rss:.0f} | {rss:.3f} | {naive} |"
        )
        goals.append((f"{name}: time <= {GOAL_WALL}x bare", f"{wall:.3f}x", wall <= GOAL_WALL))
        goals.append((f"{name}: memory <= {GOAL_RSS}x bare", f"{rss:.3f}x", rss <= GOAL_RSS))
        if n.wall and name == "mlp100":
            speedup = n.median_wall / g.median_wall
            goals.append(
                (
                    f"{name}: >= {GOAL_NAIVE}x faster than the naive loop",
                    f"{speedup:.2f}x",
                    speedup >= GOAL_NAIVE,
                )
            )
            if speedup < GOAL_NAIVE:
                notes.append(_naive_note(n.median_wall, b.median_wall, startup))
    if "chain1000" in results and "chain10000" in results:
        small = results["chain1000"][1]
        large = results["chain10000"][1]
        growth = large["gradscope"].median_wall / small["gradscope"].median_wall
        bare_growth = large["bare"].median_wall / small["bare"].median_wall
        goals.append(
            (
                f"1,000 -> 10,000 nodes costs <= {GOAL_LINEAR}x",
                f"{growth:.2f}x (bare TensorFlow: {bare_growth:.2f}x)",
                growth <= GOAL_LINEAR,
            )
        )
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
        lines += ["## Why a goal is not met", "", *notes, ""]
    return "\n".join(lines)


def _naive_note(naive: float, bare: float, startup: dict[str, float]) -> str:
    """Why whole-process time cannot beat the eager loop by the goal's margin here."""
    needed = naive / GOAL_NAIVE
    floor = startup["tensorflow"]
    text = (
        f"The naive eager loop takes {naive:.2f} s; {GOAL_NAIVE}x faster means {needed:.2f} s "
        f"for a whole process. The bare script, which computes the same gradients the fastest "
        f"traced way and which gradscope matches, takes {bare:.2f} s: at this size the cost is "
        f"fixed (importing TensorFlow, tracing one function and its graph optimization), and "
        f"an eager loop pays no tracing. "
    )
    if needed < floor:
        text += f"Importing TensorFlow alone takes {floor:.2f} s, more than {needed:.2f} s. "
    return text + (
        "Even where compute dominates (large batches) the bound is arithmetic: per-loss norms "
        "need one backward pass per loss either way, so one forward pass instead of four saves "
        "at most 3F of (4F + B), where B = 2F x (sum of the loss depths / 100) = 5F for heads "
        "at layers 25, 50, 75, 100: at most 9F / 6F = 1.5x, with nothing left for tracing."
    )
