"""What watching costs a whole process (issue 33): ``gradscope run``, ``gradscope.watch()``,
``pytest --gradscope`` and the Keras Monitor against plain ``python``, start to end.

``bench/run_overhead.py`` measures steps; users feel the process: interpreter start, the
TensorFlow import, the program's own work and gradscope's one-time work on each watched call
site (analysing and instrumenting the step), with the program running to its end (the
default). Each program runs, in its own process, every way of its row, the ways alternating
within each run (plain, watched, plain, watched, ...); a row's ratio is the median over the
runs of each run's watched / plain (side by side), for CPU seconds of the process (user +
system, from ``wait4``: what a shared machine disturbs least), wall seconds and peak RSS.

Goals: ``gradscope run`` at most 1.10x plain on every program of 64 steps or more, at most
1.2x on the 4-step ResNet50; the Monitor at ``every=10`` with TensorBoard at most 1.10x a plain
512-step fit (1.2x with histograms); ``watch()`` and ``pytest --gradscope`` no more than
``run`` of the same code (``watch()`` against ``run`` itself; ``pytest --gradscope``'s cost
against plain pytest, against run's against plain python: pytest's own start is no
watching); peak memory within 1.1x everywhere. ``--ops`` also prints each
the op counts of ResNet50's and the small model's train steps, and the one-time cost per op
(how it grows with the model).

    python bench/process.py [--runs 3] [--big-runs 2] [--only resnet50-64 mlp ...] [--ops]
                            [--device cpu|gpu|auto]

``--device cpu`` hides any GPU (``CUDA_VISIBLE_DEVICES=``); ``--device gpu`` requires one
(figures on a GPU need a GPU machine).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RESNET = """
import sys
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.keras.utils.set_random_seed(0)
inputs = tf.keras.Input((32, 32, 3))
base = tf.keras.applications.ResNet50(weights=None, include_top=False, input_tensor=inputs,
                                      pooling="avg")
head_a = tf.keras.layers.Dense(10, name="head_a")(base.output)
head_b = tf.keras.layers.Dense(1, name="head_b")(base.output)  # no loss: a None gradient
model = tf.keras.Model(inputs, [head_a, head_b])
model.compile("adam", [tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), None])
rng = np.random.default_rng(0)
x = rng.normal(size=(16 * steps, 32, 32, 3)).astype("float32")
y = rng.integers(0, 10, 16 * steps)
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
"""

# A tenth of ResNet50's train step in ops: a few conv blocks, the same two heads.
SMALL = """
import sys
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.keras.utils.set_random_seed(0)
inputs = tf.keras.Input((32, 32, 3))
h = inputs
for width in (16, 32, 64, 64, 128):
    h = tf.keras.layers.Conv2D(width, 3, padding="same")(h)
    h = tf.keras.layers.BatchNormalization()(h)
    h = tf.keras.layers.ReLU()(h)
h = tf.keras.layers.GlobalAveragePooling2D()(h)
head_a = tf.keras.layers.Dense(10, name="head_a")(h)
head_b = tf.keras.layers.Dense(1, name="head_b")(h)
model = tf.keras.Model(inputs, [head_a, head_b])
model.compile("adam", [tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), None])
rng = np.random.default_rng(0)
x = rng.normal(size=(16 * steps, 32, 32, 3)).astype("float32")
y = rng.integers(0, 10, 16 * steps)
model.fit(x, y, batch_size=16, epochs=1, verbose=0)
"""

OPS = """
import os
if os.environ.get("BENCH_OPS"):  # --ops: the train step's op count (its nested functions too)
    def functions(fn, seen):
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if id(value) not in seen:
                seen.add(id(value))
                if hasattr(value, "_list_all_concrete_functions"):
                    yield value
                elif callable(value):
                    yield from functions(value, seen)

    def ops(graph):
        nested = [getattr(f, "graph", None) for f in graph._functions.values()]
        return len(graph.get_operations()) + sum(len(g.get_operations()) for g in nested if g)

    graphs = [c.graph for f in functions(model.train_function, set())
              for c in f._list_all_concrete_functions()]
    print("OPS", max(ops(g) for g in graphs))
    # the step that runs: Keras' outer function, with the train step trace it calls (the
    # kept one: a first trace that created the optimizer's variables is thrown away)
    print("STEP", sum(ops(g) for g in graphs if g.name == "multi_step_on_iterator"))
"""

# The bench MLP of bench/monitor.py: 64 -> 256 -> 256 -> 256 -> 10, Adam, batch 64.
MLP = """
import os
import sys
import tempfile
import numpy as np
import tensorflow as tf

steps, monitor = int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((64,))] +
                            [tf.keras.layers.Dense(256, activation="relu") for _ in range(3)] +
                            [tf.keras.layers.Dense(10)])
model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
x = rng.normal(size=(64 * steps, 64)).astype("float32")
y = rng.integers(0, 10, 64 * steps)
callbacks = []
if monitor:
    import gradscope.keras
    where = tempfile.mkdtemp()
    callbacks.append(gradscope.keras.Monitor(every=10, tensorboard=os.path.join(where, "tb"),
                                             histograms=monitor == "histograms"))
model.fit(x, y, batch_size=64, epochs=1, verbose=0, callbacks=callbacks)
"""

GAN = """
import sys
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.keras.utils.set_random_seed(0)
generator = tf.keras.Sequential([tf.keras.Input((32,)),
                                 tf.keras.layers.Dense(128, activation="relu"),
                                 tf.keras.layers.Dense(128, activation="relu"),
                                 tf.keras.layers.Dense(64)])
discriminator = tf.keras.Sequential([tf.keras.Input((64,)),
                                     tf.keras.layers.Dense(128, activation="relu"),
                                     tf.keras.layers.Dense(1)])
g_opt, d_opt = tf.keras.optimizers.Adam(1e-4), tf.keras.optimizers.Adam(1e-4)
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
real = tf.constant(np.random.default_rng(0).normal(size=(64, 64)), tf.float32)

@tf.function
def train_step(real):
    noise = tf.random.normal((64, 32))
    with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
        fake = generator(noise, training=True)
        real_out, fake_out = discriminator(real), discriminator(fake)
        g_loss = bce(tf.ones_like(fake_out), fake_out)
        d_loss = bce(tf.ones_like(real_out), real_out) + bce(tf.zeros_like(fake_out), fake_out)
    g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
    d_grads = d_tape.gradient(d_loss, discriminator.trainable_variables)
    g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
    d_opt.apply_gradients(zip(d_grads, discriminator.trainable_variables))
    return g_loss, d_loss

for _ in range(steps):
    train_step(real)
"""

TF1 = """
import sys
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(0)
x = tf.compat.v1.placeholder(tf.float32, (None, 64))
y = tf.compat.v1.placeholder(tf.int64, (None,))
def dense(h, width, name):
    with tf.compat.v1.variable_scope(name):
        w = tf.compat.v1.get_variable("kernel", (h.shape[-1], width),
                                      initializer=tf.compat.v1.glorot_uniform_initializer())
        b = tf.compat.v1.get_variable("bias", (width,), initializer=tf.zeros_initializer())
    return tf.matmul(h, w) + b

h = x
for i in range(3):
    h = tf.nn.relu(dense(h, 256, f"dense{i}"))
logits = dense(h, 10, "logits")
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
train = tf.compat.v1.train.AdamOptimizer(1e-3).minimize(loss)
rng = np.random.default_rng(0)
xs = rng.normal(size=(64, 64)).astype("float32")
ys = rng.integers(0, 10, 64)
with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    for _ in range(steps):
        session.run([train, loss], {x: xs, y: ys})
"""

EAGER = """
import sys
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((64,))] +
                            [tf.keras.layers.Dense(256, activation="relu") for _ in range(3)] +
                            [tf.keras.layers.Dense(10)])
opt = tf.keras.optimizers.Adam(1e-3)
rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(64, 64)), tf.float32)
y = tf.constant(rng.integers(0, 10, 64))
for _ in range(steps):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            y, model(x), from_logits=True))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
"""

# A test file running a program's code: pytest and pytest --gradscope against gradscope run.
TEST = """
import runpy
import sys

import tensorflow  # noqa: F401  (the file names TensorFlow: --gradscope watches it)

def test_program():
    sys.argv = [{program!r}, {steps!r}]
    runpy.run_path({program!r}, run_name="__main__")
"""

# The same code inside a gradscope.watch() block.
WATCH = """
import runpy
import sys

import gradscope

sys.argv = [{program!r}, *sys.argv[1:]]
with gradscope.watch():
    runpy.run_path({program!r}, run_name="__main__")
"""

# The MLP on Keras' JAX backend (KERAS_BACKEND=jax, the row's environment): Keras' JAX
# trainer, its value_and_grad inside jax.jit; no seed (Keras' set_random_seed would import
# TensorFlow, which neither way imports otherwise).
JAX_MLP = """
import sys
import numpy as np
import keras

steps = int(sys.argv[1])
model = keras.Sequential([keras.Input((64,))] +
                         [keras.layers.Dense(256, activation="relu") for _ in range(3)] +
                         [keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
x = rng.normal(size=(64 * steps, 64)).astype("float32")
y = rng.integers(0, 10, 64 * steps)
model.fit(x, y, batch_size=64, epochs=1, verbose=0)
"""

# The same MLP in plain JAX: a dict of parameters, jax.value_and_grad inside jax.jit, SGD.
JAX_PLAIN = """
import sys
import jax
import jax.numpy as jnp
import numpy as np

steps = int(sys.argv[1])
sizes = [64, 256, 256, 256, 10]
keys = jax.random.split(jax.random.PRNGKey(0), len(sizes))
params = {f"dense_{i}": {"w": jax.random.normal(keys[i], (a, b)) * (2 / a) ** 0.5,
                         "b": jnp.zeros(b)} for i, (a, b) in enumerate(zip(sizes, sizes[1:]))}
rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(64, 64)).astype("float32"))
y = jnp.asarray(rng.integers(0, 10, 64))

def loss_fn(p, x, y):
    h = x
    for i in range(len(sizes) - 1):
        h = h @ p[f"dense_{i}"]["w"] + p[f"dense_{i}"]["b"]
        h = jax.nn.relu(h) if i < len(sizes) - 2 else h
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), y[:, None], 1))

@jax.jit
def step(p, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads), loss

for _ in range(steps):
    params, loss = step(params, x, y)
loss.block_until_ready()
"""

PROGRAMS = {"resnet50": RESNET + OPS, "small": SMALL + OPS, "mlp": MLP, "gan": GAN, "tf1": TF1,
            "eager": EAGER, "jax-mlp": JAX_MLP, "jax-plain": JAX_PLAIN}  # fmt: skip
#: Keras on JAX: the backend is read from the environment at Keras' first import.
JAX_ENV = {"KERAS_BACKEND": "jax"}


@dataclass
class Row:
    """One program, run every way of ``ways`` (the first is the baseline)."""

    name: str
    program: str
    args: list[str]
    ways: list[str]
    goal: float
    samples: dict[str, list[tuple[float, float, float]]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)  # the processes' environment, added


def rows() -> list[Row]:
    run = ["python", "gradscope run"]
    return [
        Row("resnet50-64", "resnet50", ["64"], run, 1.10),
        Row("resnet50-4", "resnet50", ["4"], run, 1.20),
        Row("small-4", "small", ["4"], run, 1.20),
        Row("mlp", "mlp", ["512"], [*run, "watch()", "pytest", "pytest --gradscope"], 1.10),
        Row("gan", "gan", ["200"], [*run, "watch()"], 1.10),
        Row("tf1", "tf1", ["200"], run, 1.10),
        Row("eager", "eager", ["200"], [*run, "watch()"], 1.10),
        Row("monitor", "mlp", ["512"], ["python", "Monitor(every=10, tensorboard)"], 1.10),
        Row("monitor-histograms", "mlp", ["512"],
            ["python", "Monitor(every=10, tensorboard, histograms)"], 1.20),
        Row("jax-mlp", "jax-mlp", ["512"], [*run, "watch()"], 1.10, env=JAX_ENV),
        Row("jax-plain", "jax-plain", ["512"], [*run, "watch()"], 1.10),
    ]  # fmt: skip


def command(way: str, row: Row, files: dict[str, Path]) -> list[str]:
    program = str(files[row.program])
    py = sys.executable
    match way:
        case "python":
            return [py, program, *row.args]
        case "gradscope run":
            report = str(files["report"])
            return [py, "-m", "gradscope", "run", "--output", report, program, *row.args]
        case "watch()":
            return [py, str(files[f"watch-{row.program}"]), *row.args]
        case "pytest":
            return [*PYTEST, str(files["test"])]
        case "pytest --gradscope":
            return [*PYTEST, "--gradscope", str(files["test"])]
        case "Monitor(every=10, tensorboard)":
            return [py, program, *row.args, "tensorboard"]
        case "Monitor(every=10, tensorboard, histograms)":
            return [py, program, *row.args, "histograms"]
    raise ValueError(way)


#: pytest with gradscope's plugin as installing gradscope registers it (``pytest11``), named
#: here too: an editable install made before the entry point existed lacks it.
def _pytest() -> list[str]:
    from importlib.metadata import entry_points

    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if any(e.name == "gradscope" for e in entry_points(group="pytest11")):
        return command
    return [*command, "-p", "gradscope._src.watch.pytest_plugin"]


PYTEST = _pytest()


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """CPU seconds (user + system), wall seconds and peak RSS (MB) of one process."""
    start = time.perf_counter()
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if process.returncode not in (0, 1):  # 1: gradscope found the None gradient it should
        sys.exit(f"{' '.join(cmd)} failed ({process.returncode}):\n{err.decode()[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def write_programs(where: Path) -> dict[str, Path]:
    files = {}
    for name, text in PROGRAMS.items():
        files[name] = where / f"{name}.py"
        files[name].write_text(textwrap.dedent(text))
        files[f"watch-{name}"] = where / f"watch_{name}.py"
        # a JAX script imports JAX before its watch() block, as one that uses watch() does
        first = "import jax\n" if name.startswith("jax") else ""
        files[f"watch-{name}"].write_text(first + WATCH.format(program=str(files[name])))
    files["report"] = where / "report.txt"
    files["test"] = where / "test_program.py"
    files["test"].write_text(TEST.format(program=str(files["mlp"]), steps="512"))
    files["warm-test"] = where / "test_warm.py"
    files["warm-test"].write_text(TEST.format(program=str(files["mlp"]), steps="1"))
    return files


def warm_up(wanted: list[Row], files: dict[str, Path], env: dict[str, str]) -> None:
    """Run each way once on one step, unmeasured, so that every measured process finds the
    bytecode caches an installed package has (gradscope's ``.pyc`` files, and pytest's
    assertion-rewritten ones of the plugin's package): the first process of a way would
    otherwise compile them, and with 2 runs that one is half the median."""
    warm = {**files, "test": files["warm-test"]}
    seen = set()
    for row in wanted:
        for way in row.ways:
            if (way, row.program) not in seen:
                seen.add((way, row.program))
                short = Row(row.name, row.program, ["1"], [], 0, env=row.env)
                measure(command(way, short, warm), {**env, **row.env})


def environment(device: str) -> dict[str, str]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # users' processes read bytecode caches
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    elif device == "gpu":
        probe = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
        seen = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              text=True, check=False).stdout.strip()  # fmt: skip
        if not seen or seen == "0":
            _usage("--device gpu: TensorFlow sees no GPU on this machine (GPU figures need "
                   "a GPU machine)")  # fmt: skip
    return env


def ratio(row: Row, way: str, index: int, base: str | None = None) -> float:
    """The median over runs of ``way`` / ``base`` (the row's first way) for one measure."""
    against, mine = row.samples[base or row.ways[0]], row.samples[way]
    return statistics.median(m[index] / b[index] for b, m in zip(against, mine, strict=True))


#: The in-process doors against ``gradscope run`` (issue 33: no more than run on the same
#: code), and pytest --gradscope against plain pytest (what watching adds to a test run).
AGAINST = [("watch()", "gradscope run"), ("pytest --gradscope", "gradscope run"),
           ("pytest --gradscope", "pytest")]  # fmt: skip


def doors(measured: list[Row]) -> str:
    """One line per row that has an in-process door: its CPU ratios to ``AGAINST``."""
    lines = []
    for row in measured:
        said = [f"{way} / {base} {ratio(row, way, 0, base):.3f}" for way, base in AGAINST
                if way in row.samples and base in row.samples]  # fmt: skip
        if said:
            lines.append(f"{row.name}: CPU " + ", ".join(said) + " (goal: watch() at most "
                         "1.00x gradscope run; pytest --gradscope / pytest at most gradscope "
                         "run / python)")  # fmt: skip
    return "\n".join(lines)


def _against_run(row: Row, way: str) -> str:
    """Issue 33: an in-process door costs no more than ``run`` on the same code. A cost is a
    ratio to the unwatched form: ``run`` and ``watch()`` run the program under ``python``,
    so ``watch()`` is judged against ``run`` itself; ``pytest --gradscope`` runs it in a test
    under pytest (whose own start, ~0.5 s, is no watching), so its cost, against plain
    pytest, is judged against run's, against plain python. Both ratios are printed."""
    if way == "watch()" or "pytest" not in row.samples:
        r = ratio(row, way, 0, "gradscope run")
        return f"<= run ({r:.3f}x run): {'met' if r <= 1.0 else 'not met'}"
    mine, runs = ratio(row, way, 0, "pytest"), ratio(row, "gradscope run", 0)
    return (
        f"cost <= run's ({mine:.3f}x pytest, run {runs:.3f}x python): "
        f"{'met' if mine <= runs else 'not met'}"
    )


def table(measured: list[Row]) -> str:
    lines = ["| program | way | CPU s | wall s | peak MB | CPU ratio | wall ratio | "
             "memory ratio | goal |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in measured:
        for way in row.ways:
            got = row.samples[way]
            cpu, wall, rss = (statistics.median(s[i] for s in got) for i in range(3))
            if way == row.ways[0]:
                ratios = "| | | |"
            else:
                c, w, m = (ratio(row, way, i) for i in range(3))
                goal = (
                    ""
                    if way.startswith("pytest") and way != "pytest --gradscope"
                    else (f"{row.goal:.2f}x: {'met' if c <= row.goal else 'not met'}")
                )
                if way in ("watch()", "pytest --gradscope") and "gradscope run" in row.samples:
                    goal = _against_run(row, way)
                ratios = f"| **{c:.3f}** | {w:.3f} | {m:.3f} | {goal}"
            lines.append(f"| {row.name} | {way} | {cpu:.2f} | {wall:.2f} | {rss:.0f} {ratios} |")
    return "\n".join(lines)


def machine() -> str:
    import re

    model = "unknown CPU"
    try:
        text = Path("/proc/cpuinfo").read_text()
        found = re.search(r"model name\s*:\s*(.+)", text)
        model = found.group(1).strip() if found else model
        mem = re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text())
        memory = f"{int(mem.group(1)) / 1024**2:.0f} GiB" if mem else "?"
    except OSError:
        memory = "?"
    tf = subprocess.run([sys.executable, "-c", "import tensorflow as tf; print(tf.__version__)"],
                        capture_output=True, text=True, check=False,
                        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}).stdout.strip()  # fmt: skip
    return (
        f"nproc {os.cpu_count()}, {model}, {memory}, Python {platform.python_version()}, "
        f"TensorFlow {tf}, load average {os.getloadavg()[0]:.1f} at the start"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per way (alternating)")
    parser.add_argument("--big-runs", type=int, help="runs of the ResNet50 rows (default: --runs)")
    parser.add_argument("--only", nargs="*", help="rows to run (default: all)")
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    parser.add_argument(
        "--ops",
        action="store_true",
        help="also count the ops of ResNet50's and the small model's train step",
    )
    args = parser.parse_args()
    wanted = [r for r in rows() if not args.only or r.name in args.only]
    unknown = set(args.only or ()) - {r.name for r in rows()}
    if unknown:
        _usage(f"--only: no such row {', '.join(sorted(unknown))} "
               f"(rows: {', '.join(r.name for r in rows())})")  # fmt: skip
    env = environment(args.device)
    print(machine(), flush=True)
    where = Path(tempfile.mkdtemp(prefix="gradscope-bench-"))
    started = time.perf_counter()
    try:
        files = write_programs(where)
        warm_up(wanted, files, env)
        print(f"warmed up in {time.perf_counter() - started:.0f} s", flush=True)
        for row in wanted:
            big = row.program == "resnet50" and args.big_runs is not None
            for _ in range(args.big_runs if big else args.runs):
                for way in row.ways:
                    got = measure(command(way, row, files), {**env, **row.env})
                    row.samples.setdefault(way, []).append(got)
                    print(f"{row.name:<20} {way:<44} CPU {got[0]:7.2f} s  wall {got[1]:7.2f} s"
                          f"  {got[2]:6.0f} MB", flush=True)  # fmt: skip
        print(f"\n{len(wanted)} rows, {args.runs} runs, {time.perf_counter() - started:.0f} s\n")
        print(table(wanted))
        print("\n" + doors(wanted))
        one_time(wanted, op_counts(files, env) if args.ops else {})
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _usage(message: str) -> None:
    print(f"bench/process.py: {message}", file=sys.stderr)
    sys.exit(2)


def op_counts(files: dict[str, Path], env: dict[str, str]) -> dict[str, int]:
    """The train step's op count of ResNet50 and of the small model (``name``: the largest
    trace, from a plain run), and the ops of the step that runs, plain (``name-plain``) and
    watched by ``gradscope run`` (``name-watched``): what watching adds to the graph
    TensorFlow traces and Grappler optimises, counted, where CPU seconds move by 20%."""
    out = {}
    counting = {**env, "BENCH_OPS": "1"}
    for name in ("resnet50", "small"):
        for way in ("python", "gradscope run"):
            cmd = command(way, Row(name, name, ["2"], [], 0), files)
            done = subprocess.run(cmd, env=counting, capture_output=True, text=True,
                                  check=False)  # fmt: skip
            if done.returncode not in (0, 1):  # 1: the None gradient gradscope should find
                sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            step = int(done.stdout.split("STEP", 1)[1].split()[0])
            if way == "python":
                out[name] = int(done.stdout.split("OPS", 1)[1].split()[0])
                out[f"{name}-plain"] = step
            else:
                out[f"{name}-watched"] = step
    return out


def added_ops(ops: dict[str, int]) -> str:
    """What watching adds to the step that runs, ResNet50 against the small model."""
    parts = []
    for name in ("resnet50", "small"):
        plain, watched = ops[f"{name}-plain"], ops[f"{name}-watched"]
        parts.append(f"{name} {plain} -> {watched} (+{watched - plain}, "
                     f"+{(watched - plain) / plain:.1%})")  # fmt: skip
    return "ops of the step that runs, python -> gradscope run: " + ", ".join(parts)


def one_time(measured: list[Row], ops: dict[str, int]) -> None:
    """How the one-time cost grows with the model: ResNet50 against the small model, 4 steps
    each (CPU seconds of run minus python's, medians of the side-by-side differences)."""
    got = {r.name: r for r in measured}
    if ops:
        print(f"\n{added_ops(ops)}")
    if "resnet50-4" not in got or "small-4" not in got:
        return
    cost = {}
    for name in ("resnet50-4", "small-4"):
        row = got[name]
        pairs = zip(row.samples["python"], row.samples["gradscope run"], strict=True)
        cost[name] = statistics.median(m[0] - b[0] for b, m in pairs)
    said = f"one-time cost (CPU s, run - python, 4 steps): resnet50 {cost['resnet50-4']:.2f}, "
    said += f"small {cost['small-4']:.2f}"
    if min(cost.values()) <= 0:  # run skips TensorFlow's teardown at exit: it can be cheaper
        print(f"\n{said}: no ratio (a process of run cost less than python's; the ops above "
              "say how the work grows)")  # fmt: skip
        return
    said += f": {cost['resnet50-4'] / cost['small-4']:.1f}x"
    if ops:
        said += (f" for {ops['resnet50'] / ops['small']:.1f}x the ops ({ops['resnet50']} and "
                 f"{ops['small']}: {cost['resnet50-4'] / ops['resnet50'] * 1e3:.2f} and "
                 f"{cost['small-4'] / ops['small'] * 1e3:.2f} ms per op)")  # fmt: skip
    print(f"\n{said}")


if __name__ == "__main__":
    main()
