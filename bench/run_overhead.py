"""What ``gradscope run`` costs a training loop: watched steps, and steps after ``--steps``.

Each training program times its own steps (median of the steps measured) and runs three
ways, each in its own process (``--runs`` times, alternating; medians): plainly with
Python, under ``gradscope run --steps ALL`` (every step watched), and under
``gradscope run --steps 1 --continue`` (every step but the first unwatched). Goals
(issue 16): a watched step at most 2x an unwatched one; unwatched steps at the program's
own speed.

    python bench/run_overhead.py [--steps 30] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
import sys, time
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((64,))] +
                            [tf.keras.layers.Dense(256, activation="relu") for _ in range(8)] +
                            [tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.SGD(0.01)
x = tf.constant(np.random.default_rng(0).normal(size=(128, 64)), tf.float32)
y = tf.constant(np.random.default_rng(1).integers(0, 10, 128))

def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            y, model(x), from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

if MODE == "function":
    step = tf.function(step)
times = []
for i in range(steps + 1):
    start = time.perf_counter()
    float(step())
    times.append(time.perf_counter() - start)
times = times[1:]  # the first step traces (function) or warms up (eager)
print("MEDIAN", sorted(times)[len(times) // 2], "FIRST_AFTER", times[0])
"""


def _run(mode: str, how: str, steps: int, folder: Path) -> float:
    script = folder / f"train_{mode}.py"
    script.write_text(f"MODE = {mode!r}\n" + PROGRAM, encoding="utf-8")
    if how == "plain":
        command = [sys.executable, str(script), str(steps)]
    elif how == "watched":  # every step watched (the first is the trace/warm-up step)
        command = [sys.executable, "-m", "gradscope", "run", "--steps", str(steps + 1),
                   "--output", str(folder / "report.txt"), str(script), str(steps)]  # fmt: skip
    else:  # watched once, then unwatched
        command = [sys.executable, "-m", "gradscope", "run", "--steps", "1", "--continue",
                   "--output", str(folder / "report.txt"), str(script), str(steps)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("MEDIAN"))
    return float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3, help="processes per way, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print("| loop | plain ms/step | watched ms/step | ratio | after --steps ms/step | ratio |")
        print("|---|---|---|---|---|---|")
        for mode in ("function", "eager"):
            times: dict[str, list[float]] = {"plain": [], "watched": [], "after": []}
            for _ in range(args.runs):  # alternating, so load on the machine hits every way
                for how, found in times.items():
                    found.append(_run(mode, how, args.steps, Path(tmp)))
            plain, watched, after = (sorted(t)[len(t) // 2] for t in times.values())
            print(f"| {mode} | {plain * 1e3:.2f} | {watched * 1e3:.2f} | {watched / plain:.2f}x "
                  f"| {after * 1e3:.2f} | {after / plain:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
