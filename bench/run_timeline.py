"""What ``gradscope run --every K --timeline FILE`` costs a training loop (issue 17).

The training program of ``bench/run_overhead.py`` (the bench MLP, eager and ``tf.function``)
runs plainly with Python and under ``gradscope run --steps ALL --every K --timeline FILE``,
each in its own process (``--runs`` times, alternating). The figure is the mean time of a
step over all steps but the first (which traces or warms up): measured steps included, since
they are the cost. Goal: at most 1.10x at K=10.

    python bench/run_timeline.py [--steps 300] [--every 10] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from run_overhead import PROGRAM, ROOT

MEAN = 'print("MEAN", sum(times) / len(times))\n'


def _run(mode: str, every: int | None, steps: int, folder: Path) -> float:
    script = folder / f"train_{mode}.py"
    script.write_text(f"MODE = {mode!r}\n" + PROGRAM + MEAN, encoding="utf-8")
    if every is None:
        command = [sys.executable, str(script), str(steps)]
    else:
        command = [sys.executable, "-m", "gradscope", "run", "--steps", str(steps + 1),
                   "--every", str(every), "--timeline", str(folder / "t.json"),
                   "--output", str(folder / "report.txt"), str(script), str(steps)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("MEAN"))
    return float(line.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--runs", type=int, default=3, help="processes per way, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"| loop | plain ms/step | --every {args.every} --timeline ms/step | ratio |")
        print("|---|---|---|---|")
        for mode in ("function", "eager"):
            plain: list[float] = []
            timed: list[float] = []
            for _ in range(args.runs):  # alternating, so load on the machine hits both ways
                plain.append(_run(mode, None, args.steps, Path(tmp)))
                timed.append(_run(mode, args.every, args.steps, Path(tmp)))
            p, t = sorted(plain)[len(plain) // 2], sorted(timed)[len(timed) // 2]
            print(f"| {mode} | {p * 1e3:.2f} | {t * 1e3:.2f} | {t / p:.2f}x |")


if __name__ == "__main__":
    main()
