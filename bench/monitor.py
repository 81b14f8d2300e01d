"""The cost of ``gradscope.keras.Monitor``: whole ``model.fit`` calls with and without it.

Fits of several lengths (64, 512 and 2048 steps by default), each trial a fresh model and a
whole ``fit`` call, tracing included: what a user waits for. In one process, alternating
(plain, monitored, plain, ...) so that both see the same machine state, each after a
``gc.collect()``; the ratio is the median of each pair's (monitored / the plain fit just
before it: this machine's speed drifts by 10-20% between minutes, which a ratio of medians
would mix in), in wall time and in the process' CPU time (which other processes on a shared
machine disturb less). TensorFlow runs on one thread (intra- and inter-op) for the same
reason. Every monitored fit must end with weights bit-identical to the plain one's (the
Monitor must not change training), or the bench fails.
The goal: at most 10% slower at ``every=10``. ``--write`` adds the run to bench/RESULTS.md.

    python bench/monitor.py [--trials 9] [--every 10] [--steps 64 512 2048] [--write]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL = 1.10
FEATURES, WIDTH, CLASSES, BATCH, SAMPLES = 64, 256, 10, 64, 4096


def model(seed: int) -> Any:
    """The bench MLP: 64 -> 256 -> 256 -> 256 -> 10, ReLU, Adam, cross-entropy."""
    import keras

    keras.utils.set_random_seed(seed)
    layers = [keras.Input((FEATURES,))]
    layers += [keras.layers.Dense(WIDTH, activation="relu") for _ in range(3)]
    net = keras.Sequential([*layers, keras.layers.Dense(CLASSES)])
    net.compile(
        keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return net


def trial(monitored: bool, every: int, steps: int, data: Any, directory: str) -> Any:
    """One whole fit of ``steps`` steps: (wall seconds, CPU seconds, the final weights)."""
    from gradscope.keras import Monitor

    net = model(seed=0)
    callbacks = []
    if monitored:
        callbacks.append(Monitor(every=every, timeline=os.path.join(directory, "timeline.json")))
    x, y = data
    n = min(steps * BATCH, SAMPLES)
    gc.collect()  # the trials before leave garbage: each fit pays only for its own
    wall, cpu = time.perf_counter(), time.process_time()
    net.fit(x[:n], y[:n], batch_size=BATCH, epochs=steps * BATCH // n, shuffle=False, verbose=0,
            callbacks=callbacks)  # fmt: skip
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if monitored:
        due = {1, *range(every, steps + 1, every)}  # step 1, then every K steps
        assert len(callbacks[0].steps) == len(due), "the Monitor missed records"
    return wall, cpu, [w.numpy() for w in net.weights]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=9)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--steps", type=int, nargs="+", default=[64, 512, 2048])
    parser.add_argument(
        "--write", action="store_true", help="append the result to bench/RESULTS.md"
    )
    args = parser.parse_args()
    import numpy as np
    import tensorflow as tf

    # One thread each: the machine is shared, and a single-threaded step is timed far more
    # steadily than one spread over cores other processes are using.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)

    rng = np.random.default_rng(0)
    data = (
        rng.normal(size=(SAMPLES, FEATURES)).astype("float32"),
        rng.integers(0, CLASSES, SAMPLES),
    )
    rows = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as directory:
        trial(False, args.every, 64, data, directory)  # warm-up: TensorFlow's one-time costs
        trial(True, args.every, 64, data, directory)
        for steps in args.steps:
            runs: dict[bool, list[Any]] = {False: [], True: []}
            for _ in range(args.trials):
                for monitored in (False, True):
                    runs[monitored].append(trial(monitored, args.every, steps, data, directory))
                for plain, watched in zip(runs[False][-1][2], runs[True][-1][2], strict=True):
                    np.testing.assert_array_equal(plain, watched)  # training unchanged
            pairs = list(zip(runs[False], runs[True], strict=True))
            medians = [
                statistics.median(t[k] for t in runs[m]) for k in (0, 1) for m in (False, True)
            ]
            ratios = [statistics.median(w[k] / p[k] for p, w in pairs) for k in (0, 1)]
            rows.append((steps, *medians, *ratios))
            loads.append(os.getloadavg()[0])
            print(row(rows[-1]), flush=True)
    lines = report(args, rows, loads, tf.__version__)
    print("\n".join(lines))
    if args.write:
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n" + "\n".join(lines) + "\n")


def row(r: tuple[float, ...]) -> str:
    steps, wall0, wall1, cpu0, cpu1, wall_ratio, cpu_ratio = r
    return (f"| {int(steps)} | {wall0:.2f} | {wall1:.2f} | {wall_ratio:.3f} | {cpu0:.2f} "
            f"| {cpu1:.2f} | {cpu_ratio:.3f} |")  # fmt: skip


def report(args: Any, rows: list[tuple[float, ...]], loads: list[float], tf_version: str
           ) -> list[str]:  # fmt: skip
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
               f"{platform.system()} {platform.release()}; Python {platform.python_version()}; "
               f"TensorFlow {tf_version}")  # fmt: skip
    worst = max(max(r[5], r[6]) for r in rows)
    verdict = "met" if worst <= GOAL else "**not met**"
    return [
        "## Monitor: the cost of recording gradients over training",
        "",
        f"Run {time.strftime('%Y-%m-%d')} with `python bench/monitor.py --trials {args.trials} "
        f"--every {args.every}`. Machine: {machine}.",
        "",
        f"Whole `model.fit` calls of the bench MLP ({FEATURES}-{WIDTH}-{WIDTH}-{WIDTH}-{CLASSES}, "
        f"ReLU, Adam, batch {BATCH}), tracing included, with and without "
        f"`gradscope.keras.Monitor(every={args.every}, timeline=...)`, in one process, "
        f"alternating, a fresh model per trial, {args.trials} trials each, TensorFlow on one "
        "thread; medians of the times, and of each pair's ratio. Every monitored fit ended "
        "with the plain fit's weights, bit for bit.",
        "",
        "| steps | plain (s) | with Monitor (s) | ratio | plain CPU (s) | with Monitor CPU (s) "
        "| ratio |",
        "|---|---|---|---|---|---|---|",
        *(row(r) for r in rows),
        "",
        f"Goal: a whole fit at most {GOAL:.2f}x at every={args.every}: {verdict} (worst ratio "
        f"{worst:.3f}). One-minute load average before and after each size: "
        f"{', '.join(f'{x:.1f}' for x in loads)} (the machine is shared).",
    ]


if __name__ == "__main__":
    main()
