"""The cost of ``gradscope.keras.Monitor``: ``model.fit`` of a small MLP with and without it.

In one process, alternating (plain, monitored, plain, ...) so that both see the same machine
state, each trial a fresh model trained for the same steps; the medians are compared.
TensorFlow runs on one thread (intra- and inter-op) so that other processes on a shared
machine disturb the timing less. Two
numbers per trial: the whole ``fit`` (tracing included: the Monitor traces the train step
again with its hooks) and a step in the steady state (the epochs after the first, each step
timed by a callback; the mean without the spikes of other processes taking the core).
The goal: at most 10% slower at ``every=10``. ``--write`` adds the run to bench/RESULTS.md.

    python bench/monitor.py [--trials 7] [--every 10] [--write]
"""

from __future__ import annotations

import argparse
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
FEATURES, WIDTH, CLASSES, BATCH, SAMPLES, EPOCHS = 64, 256, 10, 64, 4096, 8


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


class StepTimes:
    """Wall and CPU clocks at the start of every step (a Keras callback, built lazily so that
    Keras is imported late; a batch-begin hook keeps Keras' asynchronous logs)."""

    def __new__(cls) -> Any:
        import keras

        class Timer(keras.callbacks.Callback):  # type: ignore[misc]
            def __init__(self) -> None:
                super().__init__()
                self.clocks: list[tuple[float, float]] = []

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                self.clocks.append((time.perf_counter(), time.process_time()))

            def on_train_end(self, logs: Any = None) -> None:
                self.clocks.append((time.perf_counter(), time.process_time()))

        return Timer()


def per_step(times: list[float]) -> float:
    """Mean seconds per step, without the spikes (over 5x the median) that another process
    taking the core causes; recorded steps cost 2-3x a step and stay in."""
    import numpy as np

    steps = np.diff(np.asarray(times))
    kept = steps[steps <= 5 * np.median(steps)]
    return float(kept.mean())


def trial(monitored: bool, every: int, data: Any, directory: str) -> tuple[float, float, float]:
    """Seconds of the whole fit, and per step in the steady state (after the first epoch), in
    wall and in CPU time."""
    from gradscope.keras import Monitor

    net = model(seed=0)
    timer = StepTimes()
    callbacks = [timer]
    if monitored:
        callbacks.append(Monitor(every=every, timeline=os.path.join(directory, "timeline.json")))
    start = time.perf_counter()
    net.fit(*data, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=callbacks)
    steady = timer.clocks[SAMPLES // BATCH :]
    wall = per_step([w for w, _ in steady])
    return time.perf_counter() - start, wall, per_step([c for _, c in steady])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--every", type=int, default=10)
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
    runs: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as directory:
        trial(False, args.every, data, directory)  # warm-up: TensorFlow's one-time costs
        for _ in range(args.trials):
            for monitored in (False, True):
                runs[monitored].append(trial(monitored, args.every, data, directory))
    steps = EPOCHS * (SAMPLES // BATCH)
    fit = [statistics.median(t[0] for t in runs[m]) for m in (False, True)]
    steady = [statistics.median(t[1] for t in runs[m]) for m in (False, True)]
    cpu = [statistics.median(t[2] for t in runs[m]) for m in (False, True)]
    lines = report(args, steps, fit, steady, cpu, tf.__version__)
    print("\n".join(lines))
    if args.write:
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n" + "\n".join(lines) + "\n")


def report(
    args: Any, steps: int, fit: list[float], steady: list[float], cpu: list[float], tf_version: str
) -> list[str]:
    ratio_fit, ratio_steady, ratio_cpu = fit[1] / fit[0], steady[1] / steady[0], cpu[1] / cpu[0]
    machine = (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
               f"{platform.system()} {platform.release()}; Python {platform.python_version()}; "
               f"TensorFlow {tf_version}")  # fmt: skip
    verdict = "met" if ratio_steady <= GOAL and ratio_cpu <= GOAL else "**not met**"
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return [
        "## Monitor: the cost of recording gradients over training",
        "",
        f"Run {time.strftime('%Y-%m-%d')} with `python bench/monitor.py --trials {args.trials} "
        f"--every {args.every}`. Machine: {machine}.",
        "",
        f"`model.fit` of the bench MLP ({FEATURES}-{WIDTH}-{WIDTH}-{WIDTH}-{CLASSES}, ReLU, Adam, "
        f"batch {BATCH}, {steps} steps in {EPOCHS} epochs) with and without "
        f"`gradscope.keras.Monitor(every={args.every}, timeline=...)`, in one process, "
        f"alternating, a fresh model per trial, {args.trials} trials each, TensorFlow on one "
        "thread; medians.",
        "",
        "| measure | plain | with Monitor | ratio |",
        "|---|---|---|---|",
        f"| whole fit, tracing included (s) | {fit[0]:.3f} | {fit[1]:.3f} | {ratio_fit:.3f} |",
        f"| a step, epochs 2-{EPOCHS} (ms, wall) | {steady[0] * 1e3:.3f} | {steady[1] * 1e3:.3f} "
        f"| {ratio_steady:.3f} |",
        f"| a step, epochs 2-{EPOCHS} (ms, CPU time of the process) | {cpu[0] * 1e3:.3f} "
        f"| {cpu[1] * 1e3:.3f} | {ratio_cpu:.3f} |",
        "",
        f"Goal: training (the steady state) at most {GOAL:.2f}x at every={args.every}: {verdict}. "
        f"Load average during the run: {load} (the machine is shared).",
    ]


if __name__ == "__main__":
    main()
