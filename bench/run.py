"""``make bench``: gradscope against bare TensorFlow, side by side, as ratios.

For each model, the three ways (``gradscope inspect --format json``, the bare script, the
naive eager loop) run as separate processes, alternating, several times each; the wall time
and peak memory (max RSS) of each whole process are recorded and the medians compared.
Then the start-up costs, the linearity in model size, and the cut-point analysis on a chain
of diamonds. ``--write`` records the run in bench/RESULTS.md with the machine it came from.
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import ROOT, Model, all_models

PY = sys.executable
#: Models taking minutes per process: fewer runs each (``--big-runs``).
BIG = ("chain10000", "many1000x50")


@dataclass
class Sample:
    wall: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)

    def add(self, wall: float, rss_kb: int) -> None:
        self.wall.append(wall)
        self.rss_mb.append(rss_kb / 1024)

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_rss(self) -> float:
        return statistics.median(self.rss_mb)


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall time and max RSS (KB) of one whole process; fails loudly if it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(cmd)}\n{stderr}")
    return wall, usage.ru_maxrss


def gradscope_cmd(spec: Path, device: str) -> list[str]:
    return [PY, "-m", "gradscope", "inspect", str(spec), "--format", "json", "--quiet",
            "--device", device]  # fmt: skip


def run_model(model: Model, work: Path, runs: int, device: str) -> dict[str, Sample]:
    paths = model.write(work)
    env = dict(os.environ)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = "-1"  # the plain scripts have no --device
    samples = {"gradscope": Sample(), "bare": Sample(), "naive": Sample(), "limit": Sample()}
    commands = {
        "gradscope": gradscope_cmd(paths["spec"], device),
        "bare": [PY, str(paths["bare"])],
        "naive": [PY, str(paths["naive"])],
    }
    order = ["gradscope", "bare", "naive"]
    measure(commands["gradscope"], env)  # warm the file cache once, not counted
    for i in range(runs):
        for name in order if i % 2 == 0 else list(reversed(order)):
            samples[name].add(*measure(commands[name], env))
        # the limit's compute: the bare function's second run, printed by the process itself
        samples["limit"].wall.append(float(run_out([PY, str(paths["limit"])], env)))
        print(f"  {model.name}: run {i + 1}/{runs}", file=sys.stderr)
    return samples


def run_out(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """The last line a command prints; fails loudly if it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(cmd)}\n{proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def startup(runs: int) -> dict[str, float]:
    cmds = {
        "help": [PY, "-m", "gradscope", "--help"],
        "baseline": [PY, "-c", "import click, rich, yaml"],
        "validate": [PY, "-m", "gradscope", "validate", str(ROOT / "configs" / "multitask.yaml")],
        "tensorflow": [PY, "-c", "import tensorflow"],  # the floor under every TF process
    }
    out: dict[str, list[float]] = {k: [] for k in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            out[name].append(measure(cmd)[0])
    return {k: statistics.median(v) for k, v in out.items()}


def diamonds(n: int) -> float:
    """Seconds of cut-point analysis on a chain of ``n`` diamonds (in-process)."""
    code = f"""
import time
from gradscope._src.engine import cuts as flow
ops, producer, diff = [], [], []
def op(name, kind, *inputs):
    t = len(producer); producer.append(len(ops)); diff.append(True)
    ops.append(flow.Op(name, kind, list(inputs), [t])); return t
v = op("v", "Placeholder"); prev = op("x", "ReadVariableOp", v)
for i in range({n}):
    c = op("c", "Const"); m = op("m", "Mul", prev, c); s = op("s", "StopGradient", prev)
    prev = op("b", "AddV2", m, s)
g = flow.Graph(ops, producer, diff)
start = time.perf_counter()
vs = flow.variable_sets(g, {{v: 1}}); reach = flow.reaching(g, producer[prev])
cuts = flow.find_cuts(g, vs, reach, set(range(len(producer))), set())
assert len(cuts) == {n}
print(time.perf_counter() - start)
"""
    result = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    return float(result.stdout.strip())


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    tf_version = subprocess.run(
        [PY, "-c", "import tensorflow as tf; print(tf.__version__)"],
        capture_output=True, text=True, check=False,
    ).stdout.strip().splitlines()[-1:]  # fmt: skip
    return (
        f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; TensorFlow {''.join(tf_version)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="runs per way and model")
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    parser.add_argument("--big-runs", type=int, default=3, help=f"runs for {', '.join(BIG)}")
    parser.add_argument("--only", nargs="*", help="model names to run")
    parser.add_argument("--write", action="store_true", help="record in bench/RESULTS.md")
    parser.add_argument("--render", type=Path, help="render the samples a run saved")
    args = parser.parse_args()
    if args.render:
        from report import render

        print(render(**pickle.loads(args.render.read_bytes())))
        return
    models = [m for m in all_models() if not args.only or m.name in args.only]
    results = {}
    with tempfile.TemporaryDirectory(prefix="gradscope-bench-") as tmp:
        for model in models:
            runs = min(args.runs, args.big_runs) if model.name in BIG else args.runs
            results[model.name] = (model, run_model(model, Path(tmp), runs, args.device))
    fields = {
        "machine": machine(),
        "device": args.device,
        "runs": args.runs,
        "results": results,
        "startup": startup(max(args.runs, 5)),
        "diamonds": diamonds(200),
    }
    # the raw samples, to render again (python bench/run.py --render FILE)
    Path(tempfile.gettempdir(), "gradscope-bench.pickle").write_bytes(pickle.dumps(fields))
    from report import render  # imported late: the report can change while a run goes on

    text = render(**fields)
    print(text)
    if args.write:
        (Path(__file__).parent / "RESULTS.md").write_text(text)


if __name__ == "__main__":
    main()
