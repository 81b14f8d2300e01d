"""What ``gradscope.watch()`` and the pytest plugin cost (issue 31).

1. A watched block against ``gradscope run`` of the same code: one training program (an eager
   loop, a ``tf.function`` loop and a Keras ``fit``) times its own work and runs, each in its
   own process, plainly, under ``gradscope run --steps S --continue``, and inside
   ``with gradscope.watch(steps=S): runpy.run_path(PROGRAM)``. Goal: the block costs no more
   than ``run``.
2. The plugin on a suite whose tests take no gradients: N tests running TensorFlow ops
   forward (their file imports TensorFlow), and N pure-Python tests alone (no TensorFlow in
   the process), each suite by ``pytest`` and ``pytest --gradscope``. Goal: at most 5% more.

Ways alternate within each run; medians over ``--runs``.

    python bench/watch.py [--runs 3] [--steps 1] [--tests 200]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CPU: list[float] = []  # CPU seconds of each process run, in order

PROGRAM = """
import time
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((64,))] +
                            [tf.keras.layers.Dense(256, activation="relu") for _ in range(6)] +
                            [tf.keras.layers.Dense(10)])
model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
opt = tf.keras.optimizers.SGD(0.01)
x = np.random.default_rng(0).normal(size=(512, 64)).astype("float32")
y = np.random.default_rng(1).integers(0, 10, 512)

def step(xb, yb):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            yb, model(xb), from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    return loss

start = time.perf_counter()
for i in range(20):
    float(step(x[:128], y[:128]))
traced = tf.function(step)
for i in range(20):
    float(traced(x[:128], y[:128]))
model.fit(x, y, batch_size=32, epochs=2, verbose=0)
print("WORK", time.perf_counter() - start)
"""

BLOCK = """
import runpy, sys, gradscope
with gradscope.watch(steps={steps}) as w:
    runpy.run_path(sys.argv[1], run_name="__main__")
assert w.report.calls
"""

FORWARD_TESTS = """
import pytest
import tensorflow as tf

w = tf.random.normal([64, 64], seed=1)


@pytest.mark.parametrize("i", range({n}))
def test_forward(i):
    x = tf.random.normal([32, 64], seed=i)
    for _ in range(5):
        x = tf.nn.relu(x @ w)
    assert x.shape == (32, 64)
"""

PURE_TESTS = """
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_pure(i):
    assert sorted(range(i, 0, -1)) == list(range(1, i + 1))
"""


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _seconds(command: list[str], cwd: str) -> tuple[float, float | None]:
    """Wall seconds of the process, and the WORK seconds it printed (if any); the CPU
    seconds it used go to ``CPU`` (on a shared machine they vary less than wall time)."""
    cpu = _cpu()
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900,
                          check=False)  # fmt: skip
    wall = time.perf_counter() - start
    CPU.append(_cpu() - cpu)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    work = next((float(line.split()[1]) for line in done.stdout.splitlines()
                 if line.startswith("WORK ")), None)  # fmt: skip
    return wall, work


def block_against_run(runs: int, steps: int, here: str) -> dict[str, list[tuple[float, float]]]:
    program = Path(here, "train.py")
    program.write_text(PROGRAM)
    block = Path(here, "block.py")
    block.write_text(BLOCK.format(steps=steps))
    ways = {
        "plain": [sys.executable, str(program)],
        "gradscope run": [sys.executable, "-m", "gradscope", "run", "--steps", str(steps),
                          "--continue", "--output", str(Path(here, "r.json")), "--format",
                          "json", str(program)],
        "watch() block": [sys.executable, str(block), str(program)],
    }  # fmt: skip
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in ways}
    for _ in range(runs):
        for name, command in ways.items():
            wall, work = _seconds(command, here)
            assert work is not None
            out[name].append((wall, work))
    return out


def plugin(runs: int, tests: int, here: str) -> dict[str, dict[str, list[float]]]:
    suites = {"forward TF ops": FORWARD_TESTS, "pure Python": PURE_TESTS}
    out: dict[str, dict[str, list[float]]] = {}
    for name, text in suites.items():
        folder = Path(here, name.replace(" ", "_"))
        folder.mkdir()
        (folder / "test_suite.py").write_text(text.format(n=tests))
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                "no:randomly"]  # fmt: skip
        out[name] = {"pytest": [], "pytest --gradscope": [], "cpu": [], "cpu --gradscope": []}
        for _ in range(runs):
            out[name]["pytest"].append(_seconds(base, str(folder))[0])
            out[name]["cpu"].append(CPU[-1])
            out[name]["pytest --gradscope"].append(_seconds([*base, "--gradscope"],
                                                            str(folder))[0])  # fmt: skip
            out[name]["cpu --gradscope"].append(CPU[-1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--part", choices=["all", "block", "plugin"], default="all")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as here:
        if args.part != "plugin":
            _block(args, here)
        if args.part != "block":
            _plugin(args, here)


def _block(args: argparse.Namespace, here: str) -> None:
    ways = block_against_run(args.runs, args.steps, here)
    print(f"1. the same program ({args.runs} runs, --steps {args.steps}; medians)")
    print("| way | process s | its own work s | work / plain |")
    print("|---|---|---|---|")
    plain = statistics.median(w for _, w in ways["plain"])
    for name, rows in ways.items():
        wall = statistics.median(r[0] for r in rows)
        work = statistics.median(r[1] for r in rows)
        print(f"| {name} | {wall:.2f} | {work:.2f} | {work / plain:.2f}x |")
    run = statistics.median(w for _, w in ways["gradscope run"])
    block = statistics.median(w for _, w in ways["watch() block"])
    print(f"watch() block / gradscope run (work): {block / run:.3f}x")


def _plugin(args: argparse.Namespace, here: str) -> None:
    suites = plugin(args.runs, args.tests, here)
    print(f"\n2. the plugin on {args.tests} tests taking no gradients ({args.runs} runs; medians)")
    print("| suite | pytest s | --gradscope s | ratio | pytest CPU s | --gradscope CPU s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, t in suites.items():
        a, b = statistics.median(t["pytest"]), statistics.median(t["pytest --gradscope"])
        c, d = statistics.median(t["cpu"]), statistics.median(t["cpu --gradscope"])
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.3f}x | {c:.2f} | {d:.2f} | {d / c:.3f}x |")


if __name__ == "__main__":
    main()
