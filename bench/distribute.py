"""``make bench-distribute``: ``--strategy`` against bare TensorFlow doing the same, as ratios.

One model (an MLP, batch 64, its loss divided by the global batch) at 1 replica, at 2
replicas under ``MirroredStrategy`` (logical CPU devices), and under
``MultiWorkerMirroredStrategy`` with 2 local worker processes. The bare scripts do what a
training step does: variables under ``strategy.scope()``, the loss per replica with
``strategy.run`` on its share of the batch, a ``GradientTape``, the replicas' gradients summed
with ``all_reduce`` (as ``apply_gradients`` sums them), the norms fetched. gradscope does that
and more (the one-device trace with cut points, the per-replica statuses, the one-device
gradient of the whole batch, the variables after a step). Whole processes are timed, alternating,
medians compared. ``--write`` adds the run to bench/RESULTS.md with the machine it came from.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import machine

PY = sys.executable
ROOT = Path(__file__).resolve().parent.parent
WIDTH, DEPTH, BATCH, FEATURES, CLASSES = 128, 4, 64, 32, 10


def _layers() -> str:
    rows = [FEATURES] + [WIDTH] * (DEPTH - 1)
    return "\n".join(
        f"  l{i}/w: {{shape: [{n}, {WIDTH}], init: glorot_uniform}}" for i, n in enumerate(rows)
    )


def _nodes() -> str:
    lines = []
    for i in range(DEPTH):
        source = "x" if i == 0 else f"a{i - 1}"
        lines.append(f"  - {{name: h{i}, op: matmul, inputs: [{source}, l{i}/w]}}")
        lines.append(f"  - {{name: a{i}, op: relu, inputs: [h{i}]}}")
    return "\n".join(lines)


SPEC = f"""\
gradscope: 1
name: mlp-distributed
inputs:
  x: {{shape: [{BATCH}, {FEATURES}]}}
  labels: {{shape: [{BATCH}], dtype: int32, range: [0, {CLASSES}]}}
variables:
{_layers()}
  out/w: {{shape: [{WIDTH}, {CLASSES}], init: glorot_uniform}}
nodes:
{_nodes()}
  - {{name: logits, op: matmul, inputs: [a{DEPTH - 1}, out/w]}}
  - name: ce
    op: nn.sparse_softmax_cross_entropy_with_logits
    inputs: {{labels: labels, logits: logits}}
  - {{name: loss, op: nn.compute_average_loss, inputs: [ce], attrs: {{global_batch_size: {BATCH}}}}}
losses:
  loss: loss
"""

BARE = f"""\
import json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
mode, replicas = sys.argv[1], int(sys.argv[2])
if mode == "mirrored":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(replicas)])
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{{i}}" for i in range(replicas)])
elif mode == "multiworker":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
else:
    strategy = tf.distribute.get_strategy()
rng = np.random.default_rng(0)
x = rng.standard_normal(({BATCH}, {FEATURES})).astype("float32")
labels = rng.integers(0, {CLASSES}, {BATCH}).astype("int32")
with strategy.scope():
    init = tf.keras.initializers.GlorotUniform(seed=0)
    shapes = [({FEATURES}, {WIDTH})] + [({WIDTH}, {WIDTH})] * {DEPTH - 1} + [({WIDTH}, {CLASSES})]
    variables = [tf.Variable(init(s)) for s in shapes]
n = strategy.num_replicas_in_sync
parts = {{"x": np.array_split(x, n), "labels": np.array_split(labels, n)}}
data = strategy.experimental_distribute_values_from_function(
    lambda ctx: {{k: tf.constant(v[ctx.replica_id_in_sync_group]) for k, v in parts.items()}})

def replica(d):
    with tf.GradientTape() as tape:
        h = d["x"]
        for w in variables[:-1]:
            h = tf.nn.relu(h @ w)
        ce = tf.nn.sparse_softmax_cross_entropy_with_logits(d["labels"], h @ variables[-1])
        loss = tf.nn.compute_average_loss(ce, global_batch_size={BATCH})
    grads = tape.gradient(loss, variables)
    ctx = tf.distribute.get_replica_context()
    local = tf.stack([tf.norm(g) for g in grads])
    reduced = ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
    return ctx.all_gather(local[None], axis=0), tf.stack([tf.norm(g) for g in reduced])

step = tf.function(lambda d: strategy.run(replica, args=(d,)))
local, reduced = (strategy.experimental_local_results(t)[0] for t in step(data))
print(json.dumps({{"replicas": local.numpy().tolist(), "reduced": reduced.numpy().tolist()}}))
"""

LAUNCH = """\
import json, os, socket, subprocess, sys
n, script = int(sys.argv[1]), sys.argv[2]
socks = [socket.socket() for _ in range(n)]
for s in socks:
    s.bind(("127.0.0.1", 0))
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
procs = []
for i in range(n):
    cfg = {"cluster": {"worker": [f"127.0.0.1:{p}" for p in ports]},
           "task": {"type": "worker", "index": i}}
    env = {**os.environ, "TF_CONFIG": json.dumps(cfg), "CUDA_VISIBLE_DEVICES": ""}
    out = None if i == 0 else subprocess.DEVNULL
    procs.append(subprocess.Popen([sys.executable, script, "multiworker", str(n)], env=env,
                                  stdout=out))
sys.exit(max(p.wait(timeout=600) for p in procs))
"""


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="record in bench/RESULTS.md")
    args = parser.parse_args()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "-1", "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "mlp.yaml").write_text(SPEC)
        (work / "bare.py").write_text(BARE)
        (work / "launch.py").write_text(LAUNCH)
        spec, bare, launch = str(work / "mlp.yaml"), str(work / "bare.py"), str(work / "launch.py")
        ways = {
            "1 replica": ([PY, "-m", "gradscope", "inspect", spec, "--format", "json", "-q"],
                          [PY, bare, "default", "1"]),
            "mirrored, 2 replicas": (
                [PY, "-m", "gradscope", "inspect", spec, "--format", "json", "-q",
                 "--strategy", "mirrored", "--replicas", "2"], [PY, bare, "mirrored", "2"]),
            "multiworker, 2 workers": (
                [PY, "-m", "gradscope", "inspect", spec, "--format", "json", "-q",
                 "--strategy", "multiworker", "--replicas", "2"], [PY, launch, "2", bare]),
        }  # fmt: skip
        rows = []
        for name, (ours, theirs) in ways.items():
            timed(ours, env)  # warm the file cache once, not counted
            a, b = [], []
            for i in range(args.runs):
                for which in ("ours", "theirs") if i % 2 == 0 else ("theirs", "ours"):
                    (a if which == "ours" else b).append(
                        timed(ours if which == "ours" else theirs, env)
                    )
            rows.append((name, statistics.median(a), statistics.median(b)))
            print(f"{name}: gradscope {rows[-1][1]:.2f}s, bare {rows[-1][2]:.2f}s, "
                  f"ratio {rows[-1][1] / rows[-1][2]:.2f}", flush=True)  # fmt: skip
    text = _section(rows, args.runs)
    print(text)
    if args.write:
        path = Path(__file__).parent / "RESULTS.md"
        path.write_text(path.read_text().rstrip("\n") + "\n\n" + text)


def _section(rows: list[tuple[str, float, float]], runs: int) -> str:
    lines = [
        "## Distributed runs (`--strategy`)",
        "",
        f"Run {time.strftime('%Y-%m-%d')} with `make bench-distribute` ({runs} runs per way, "
        f"alternating; medians). Machine: {machine()}.",
        "",
        f"One MLP ({DEPTH} ReLU layers of width {WIDTH}, batch {BATCH}, the loss divided by the "
        "global batch), whole processes: `gradscope inspect --format json` against a bare "
        "TensorFlow script doing one distributed step (variables under `strategy.scope()`, "
        "`strategy.run` per replica on its share of the batch, the gradients all-reduced, "
        "norms fetched). gradscope also traces the one-device run (statuses, cut points), "
        "builds the model again for the one-device gradient of the whole batch, and compares "
        "the replicas' variables after a step.",
        "",
        "| setting | gradscope s | bare s | time ratio |",
        "|---|---|---|---|",
    ]
    lines += [f"| {n} | {a:.2f} | {b:.2f} | {a / b:.2f} |" for n, a, b in rows]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
