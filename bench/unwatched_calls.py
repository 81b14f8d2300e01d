"""What an eager gradient call costs once its call site has had its ``--steps`` (issue 28).

A trivial eager step (one variable, ``w * w`` under a tape, ``tape.gradient``) runs 200 times
to warm up (the first is watched), then N more timed; each way in its own process, the ways
alternating, ``--runs`` times: ``python`` itself, and ``gradscope run`` (the default: the
program runs to its end, each site watched for its first step). ``--tree DIR`` runs another
checkout's gradscope as ``before`` (with ``--continue``, its way to run to the end).

    python bench/unwatched_calls.py [--calls 3000] [--runs 5] [--tree /path/to/old/checkout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
import sys, time
import tensorflow as tf

w = tf.Variable(1.0, name="w")


def step():
    with tf.GradientTape() as tape:
        loss = w * w
    return tape.gradient(loss, w)


for _ in range(200):
    step()
n = int(sys.argv[1])
start = time.perf_counter()
for _ in range(n):
    step()
print("CALLS_PER_S", n / (time.perf_counter() - start))
"""


def _calls_per_s(command: list[str], tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600,
                          check=True)  # fmt: skip
    line = next(x for x in done.stdout.splitlines() if x.startswith("CALLS_PER_S"))
    return float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", type=Path, default=None, help="an older checkout: 'before'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "trivial.py"
        script.write_text(PROGRAM, encoding="utf-8")
        ways = {"python": ([sys.executable, str(script), str(args.calls)], ROOT),
                "gradscope run": ([sys.executable, "-m", "gradscope", "run", str(script),
                                   str(args.calls)], ROOT)}  # fmt: skip
        if args.tree is not None:
            ways["before (--continue)"] = ([sys.executable, "-m", "gradscope", "run",
                                            "--continue", str(script), str(args.calls)],
                                           args.tree)  # fmt: skip
        got: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(args.runs):
            for name, (command, tree) in ways.items():
                got[name].append(_calls_per_s(command, tree))
    plain = statistics.median(got["python"])
    for name, values in got.items():
        median = statistics.median(values)
        print(
            f"{name:22s} median {median:7.0f} calls/s  ({median / plain:.2f}x python)  "
            f"runs: {', '.join(f'{v:.0f}' for v in values)}"
        )


if __name__ == "__main__":
    main()
