"""The best ratio gradscope could reach against the naive loop, measured by timing the naive
loop's own phases inside its process.

gradscope must import TensorFlow, build the model, run one forward pass and one backward
pass per loss. The naive loop does all that, plus one more forward pass per further loss,
and its import carries ``matplotlib.pyplot`` (Keras imports it when it is installed; a
spec's run keeps it out). So even if gradscope's own analysis cost nothing, it could be at
best the naive process's time minus those later forward passes and that import:

    python bench/bound.py --runs 3 --only resnet50 mlp100b256
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import models

PY = sys.executable

# Keras imports matplotlib.pyplot while TensorFlow imports; importing it first (after
# numpy, which TensorFlow imports before it) moves that cost where it is timed alone.
TIMED_HEAD = """\
import time
START = time.perf_counter()
import numpy
t = time.perf_counter()
import matplotlib.pyplot
MATPLOTLIB_S = time.perf_counter() - t
"""

TIMED_BUILD = "IMPORT_S = time.perf_counter() - START\nBUILT = time.perf_counter()\n"

TIMED_TAIL = """\
import json
forward_s, backward_s = [], []
for k in range(NUM_LOSSES):
    t = time.perf_counter()
    with tf.GradientTape() as tape:
        loss = forward()[k]
    forward_s.append(time.perf_counter() - t)
    t = time.perf_counter()
    gs = tape.gradient(loss, variables)
    [float(tf.norm(tf.convert_to_tensor(g))) for g in gs if g is not None]
    backward_s.append(time.perf_counter() - t)
passes = sum(forward_s) + sum(backward_s)
print(json.dumps({"import": IMPORT_S, "matplotlib": MATPLOTLIB_S,
                  "build": time.perf_counter() - BUILT - passes,
                  "forward": forward_s, "backward": backward_s}))
"""


def timed_script(model: models.Model) -> str:
    """The naive loop of ``bench/models.py``, printing its phases' seconds."""
    return TIMED_HEAD + models.PRELUDE + TIMED_BUILD + model.body + TIMED_TAIL


def seconds(values: list[float]) -> str:
    return " + ".join(f"{x:.2f}" for x in values)


def measure(path: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    proc = subprocess.run([PY, str(path)], capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", default=["resnet50", "mlp100b256"])
    args = parser.parse_args()
    by_name = {m.name: m for m in models.all_models()}
    with tempfile.TemporaryDirectory() as work:
        for name in args.only:
            path = Path(work) / f"{name}_naive_timed.py"
            path.write_text(timed_script(by_name[name]))
            ratios = []
            for _ in range(args.runs):
                naive, phases = measure(path)
                forward, backward = phases["forward"], phases["backward"]
                assert isinstance(forward, list) and isinstance(backward, list)
                best = naive - sum(forward[1:]) - float(phases["matplotlib"])  # type: ignore[arg-type]
                ratios.append(naive / best)
                print(
                    f"{name}: naive {naive:.2f} s: import {phases['import']:.2f} (matplotlib "
                    f"{phases['matplotlib']:.2f}), build {phases['build']:.2f}, forward "
                    f"{seconds(forward)}, backward {seconds(backward)}; best possible "
                    f"{best:.2f} s = {naive / best:.3f}x"
                )
            print(f"{name}: best possible ratio (median): {statistics.median(ratios):.3f}x")


if __name__ == "__main__":
    main()
