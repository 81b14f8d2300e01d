"""Watching never changes what is computed: the weights after training are the same, bit for
bit, run plainly and under each watcher.

One seeded program (``programs/same_weights.py``) trains small Keras models: a layer frozen
or unfrozen after ``fit()`` without ``compile()``, batch normalization, dropout, mixed
precision, ``steps_per_execution``, ``jit_compile`` and a ``MirroredStrategy`` over two
logical CPU devices. It runs once plainly (the reference: bare Keras) and once under each
watcher (forked, two at a time); every weight of each model and of its optimizer must have the
same dtype and bytes. The Monitor must also say what the plain run shows: a variable frozen
after Keras traced its step is still trained, one made trainable is left out.

keras-io's text-classification Transformer (embeddings, multi-head attention, layer norms)
and knowledge-distillation student (a custom ``train_step``, a frozen teacher), small, run
through every door, ``gradscope.watch()`` and ``pytest --gradscope`` included: a measuring op
reading a tensor only one of the step's ops read kept Grappler from rewriting it, and the
watched step rounded otherwise (``watcher/reads.py``).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import ROOT, Drivers
from tests.frontends.program.test_run import PROGRAMS

pytestmark = pytest.mark.tf

PROGRAM = PROGRAMS / "same_weights.py"
PYTEST = PROGRAMS / "same_weights_pytest.py"  # its cases as tests of ``pytest --gradscope``
FLAGS = {"monitor": ("--monitor",), "watch": ("--watch",)}  # the program's own options
CASES = ("frozen", "unfrozen", "watched_then_frozen", "eager", "dropout", "mixed",
         "per_execution", "xla", "mirrored", "transformer", "distiller")  # fmt: skip
RUN = ("run", "--format", "json")
#: watcher -> the gradscope command before the program's own arguments (none: ``python``;
#: "{dir}": its output directory) and the cases it runs (the costly distributed one only where
#: a strategy is the point); the doors made of ``gradscope.watch()`` on the cases whose
#: numerics a reader too many changed (issue 42)
WATCHERS = {
    "plain": ((), CASES),
    "monitor": ((), CASES),  # the program adds Monitor(every=1) (--monitor)
    "watch": ((), ("transformer", "distiller")),  # each case in watch() (--watch)
    "pytest --gradscope": ((), ("transformer", "distiller")),  # each case a watched test
    # --continue: run the program to its end (the default once issue 27 point 1 lands)
    "run": ((*RUN, "--continue"), tuple(c for c in CASES if c != "eager")),
    "run --steps 2 --strategy mirrored --replicas 2": (
        (*RUN, "--steps", "2", "--strategy", "mirrored", "--replicas", "2", "--continue"),
        ("frozen", "dropout", "per_execution", "mirrored")),
    "run --steps 6 --every 2 --timeline": (
        (*RUN, "--steps", "6", "--every", "2", "--timeline", "{dir}/timeline.json", "--continue"),
        ("frozen", "unfrozen", "dropout", "mixed", "per_execution", "xla")),
}  # fmt: skip
TIMEOUT = 600.0


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest, drivers: Drivers
) -> dict[str, tuple[Path, str]]:
    """Each watcher's output directory and standard error: the processes the selected tests
    need. Each is a process of its own, forked (``tests/forked.py``) from one of the session's
    two drivers that imported TensorFlow once (:class:`Drivers`, shared with other files): the
    ``python`` runs from a ``programs`` driver, the ``gradscope run`` ones from a ``processes``
    driver; the two drivers' processes run side by side, bounded in time."""
    wanted = {"plain"} | {item.callspec.params.get("watcher", "monitor")  # type: ignore[attr-defined]
                          for item in request.session.items
                          if item.module is request.module}  # fmt: skip
    root = tmp_path_factory.mktemp("same-weights")
    env = dict(os.environ)
    jobs: dict[bool, list[tuple[str, list[str], Path]]] = {False: [], True: []}  # run: jobs
    for i, (name, (command, cases)) in enumerate(WATCHERS.items()):
        if name not in wanted:
            continue
        out = root / f"w{i}"
        out.mkdir()
        args = [a.replace("{dir}", str(out)) for a in command]
        if args:  # gradscope run
            args += ["--output", str(out / "report.json")]
        program = PYTEST if name == "pytest --gradscope" else PROGRAM
        args += [str(program), str(out), *FLAGS.get(name, ()), *cases]
        jobs[bool(command)].append((name, args, out))
    stderr: dict[str, str] = {}
    started = {run: (drivers.processes if run else drivers.programs)(env)
               for run in jobs if jobs[run]}  # fmt: skip

    def each(run: bool) -> None:
        for name, args, out in jobs[run]:
            ran = started[run].run(args, ROOT, env, out / "logs", kill_after=TIMEOUT)
            stderr[name] = ran.stderr

    with ThreadPoolExecutor(len(started)) as pool:
        list(pool.map(each, started))
    return {name: (out, stderr[name]) for run in jobs for name, _, out in jobs[run]}


def _weights(out: Path, case: str, stderr: str) -> list[np.ndarray]:
    path = out / f"{case}.npz"
    assert path.exists(), f"no weights for {case}: {stderr[-3000:]}"
    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


@pytest.mark.parametrize(
    ("watcher", "case"),
    [pytest.param(w, c, id=f"{w}-{c}")
     for w, (_, cases) in WATCHERS.items() if w != "plain" for c in cases],
)  # fmt: skip
def test_watching_keeps_the_weights_bit_for_bit(
    runs: dict[str, tuple[Path, str]], watcher: str, case: str
) -> None:
    plain = _weights(runs["plain"][0], case, runs["plain"][1])
    watched = _weights(runs[watcher][0], case, runs[watcher][1])
    assert len(watched) == len(plain)
    for i, (a, b) in enumerate(zip(plain, watched, strict=True)):
        checksum = (float(a.astype(np.float64).sum()), float(b.astype(np.float64).sum()))
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"weight {i}"
        assert a.tobytes() == b.tobytes(), f"weight {i} differs: checksums {checksum}"


@pytest.mark.parametrize("case", ["frozen", "unfrozen", "dropout"])
def test_monitor_reports_flags_changed_after_the_trace(
    runs: dict[str, tuple[Path, str]], case: str
) -> None:
    """What the plain run's last fit() changed, against the flags at its end: a frozen
    variable it changed is still trained (unexpected-connected), a trainable one it left as it
    was is left out (never-trained); the Monitor's timeline says so at that fit()."""
    plain = json.loads((runs["plain"][0] / f"{case}-last.json").read_text())
    changed = set(plain["changed"]) & set(plain["ever_trainable"])  # not moving statistics
    trainable = set(plain["trainable"])
    timeline = json.loads((runs["monitor"][0] / f"{case}.json").read_text())
    found = {(f["kind"], f["variable"]) for f in timeline["findings"]
             if f["kind"] in ("unexpected-connected", "never-trained")}  # fmt: skip
    weights = {name for step in timeline["steps"] for name in step["variables"]}
    expected = {("unexpected-connected", n) for n in changed - trainable}
    expected |= {("never-trained", n) for n in trainable - changed}
    assert expected  # each case changes a flag that matters
    assert found == expected
    at = f"same_weights.py:{_fit_line()}"
    for finding in (f for f in timeline["findings"] if f["kind"] in dict(expected)):
        assert finding["site"].endswith(at)
        if case == "frozen":  # traced before gradscope was imported: read back, line unknown
            assert "traced at an earlier fit()" in finding["message"]
        else:
            assert (
                finding["traced_at"].endswith(at)
                and f"traced at {finding['traced_at']}" in (finding["message"])
            )
    assert changed <= weights  # the recorded steps name what the step trains


def _fit_line() -> int:
    lines = PROGRAM.read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if "model.fit(" in line)
