"""What ``gradscope run`` costs a training loop: watched steps, and steps after ``--steps``.

Each training program times its own steps (median of the steps measured) and runs three
ways, each in its own process (``--runs`` times, alternating; medians): plainly with
Python, under ``gradscope run --steps ALL`` (every step watched), and under
``gradscope run --steps 1 --continue`` (every step but the first unwatched). Goals
(issue 16): a watched step at most 2x an unwatched one; unwatched steps at the program's
own speed.

With ``--replicas N`` the same loop runs under the program's own ``MirroredStrategy`` over N
logical CPU devices (the plain program makes them itself; under ``gradscope run --replicas
N`` gradscope does), its step a ``tf.function`` calling ``strategy.run``: every watched step
gathers the N replicas' gradients and their sum.

    python bench/run_overhead.py [--steps 30] [--runs 3] [--replicas 2]
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


MIRRORED = """
import sys, time
import numpy as np
import tensorflow as tf

steps, replicas = int(sys.argv[1]), int(sys.argv[2])
cpu = tf.config.list_physical_devices("CPU")[0]
try:  # gradscope run --replicas made them already
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)])
except RuntimeError:
    pass
strategy = tf.distribute.MirroredStrategy()
assert strategy.num_replicas_in_sync == replicas
tf.keras.utils.set_random_seed(0)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((64,))] +
                                [tf.keras.layers.Dense(256, activation="relu") for _ in range(8)] +
                                [tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
x = np.random.default_rng(0).normal(size=(128, 64)).astype("float32")
y = np.random.default_rng(1).integers(0, 10, 128)
data = tf.data.Dataset.from_tensor_slices((x, y)).batch(128).repeat()
batches = iter(strategy.experimental_distribute_dataset(data))

def replica_step(xs, ys):
    with tf.GradientTape() as tape:
        logits = model(xs)
        per_example = tf.keras.losses.sparse_categorical_crossentropy(ys, logits, from_logits=True)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=128)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

@tf.function
def step(batch):
    return strategy.reduce("SUM", strategy.run(replica_step, args=batch), axis=None)

times = []
for i in range(steps + 1):
    batch = next(batches)
    start = time.perf_counter()
    float(step(batch))
    times.append(time.perf_counter() - start)
times = times[1:]  # the first step traces
print("MEDIAN", sorted(times)[len(times) // 2], "FIRST_AFTER", times[0])
"""


def _run(mode: str, how: str, steps: int, folder: Path, replicas: int = 1) -> float:
    script = folder / f"train_{mode}.py"
    source = MIRRORED if mode == "mirrored" else f"MODE = {mode!r}\n" + PROGRAM
    script.write_text(source, encoding="utf-8")
    program = [str(script), str(steps)] + ([str(replicas)] if mode == "mirrored" else [])
    more = ["--replicas", str(replicas)] if mode == "mirrored" else []
    if how == "plain":
        command = [sys.executable, *program]
    elif how == "watched":  # every step watched (the first is the trace/warm-up step)
        command = [sys.executable, "-m", "gradscope", "run", "--steps", str(steps + 1), *more,
                   "--output", str(folder / "report.txt"), *program]  # fmt: skip
    else:  # watched once, then unwatched
        command = [sys.executable, "-m", "gradscope", "run", "--steps", "1", "--continue",
                   *more, "--output", str(folder / "report.txt"), *program]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("MEDIAN"))
    return float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3, help="processes per way, alternating")
    parser.add_argument("--replicas", type=int, default=0,
                        help="only the loop under MirroredStrategy on N CPU devices")  # fmt: skip
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print("| loop | plain ms/step | watched ms/step | ratio | after --steps ms/step | ratio |")
        print("|---|---|---|---|---|---|")
        for mode in ("mirrored",) if args.replicas else ("function", "eager"):
            times: dict[str, list[float]] = {"plain": [], "watched": [], "after": []}
            for _ in range(args.runs):  # alternating, so load on the machine hits every way
                for how, found in times.items():
                    found.append(_run(mode, how, args.steps, Path(tmp), args.replicas))
            plain, watched, after = (sorted(t)[len(t) // 2] for t in times.values())
            label = f"mirrored x{args.replicas} (function)" if args.replicas else mode
            print(f"| {label} | {plain * 1e3:.2f} | {watched * 1e3:.2f} | {watched / plain:.2f}x "
                  f"| {after * 1e3:.2f} | {after / plain:.2f}x |")  # fmt: skip


if __name__ == "__main__":
    main()
