"""Hostile specs are refused with one clear line, in bounded time and memory, running nothing.

Each file in ``tests/hostile/`` is an attack: a YAML bomb, a Python tag, a denied op under
some spelling, a Keras layer or config that would run code or read a file, a tensor that
would take gigabytes. Its header says what the refusal must say (``# expect:``) and where
it must happen (``# stage: validate`` refuses before TensorFlow is imported, ``build``
before anything runs). Every spec runs as a user would run it, ``gradscope inspect`` in a
process of its own whose working directory is a scratch folder; ``os.wait4`` measures its
wall time and peak memory. The processes are forked from a driver that imported gradscope
(and, for ``build``, TensorFlow) once (``tests/forked.py``); one attack also runs as
``python -m gradscope`` from the start, the way a user's shell starts it.

Proof that nothing was executed or written: the attacks name ``MARKER`` (a file they would
create) and ``reads.fifo`` (a named pipe in the scratch folder: a process that opened it to
read would block until the time limit). Afterwards the scratch folder holds exactly what it
held before, and no ``MARKER`` exists anywhere under the test's folders.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.forked import Driver, Run, driver

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = sorted((ROOT / "tests" / "hostile").glob("*.yaml"))

#: Bounds for a spec refused before TensorFlow is imported.
VALIDATE_SECONDS, VALIDATE_MB = 5.0, 250
#: Bounds beyond a run of a tiny valid spec (importing TensorFlow dominates both).
BUILD_EXTRA_SECONDS, BUILD_EXTRA_MB = 5.0, 300
#: No run may take longer than this (a process blocked on the FIFO is killed here).
KILL_SECONDS = 60.0
_LINE = re.compile(r"^spec\.yaml:\d+:\d+: \S")


def _header(path: Path, key: str) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(f"# {key}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"{path.name} has no '# {key}:' line")


def _blocked_modules(folder: Path) -> str:
    """A folder that makes ``import tensorflow`` (and keras) fail loudly."""
    for name in ("tensorflow", "keras"):
        package = folder / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "__init__.py").write_text(
            f"raise ImportError('{name} must not be imported here')\n", encoding="utf-8"
        )
    return str(folder)


# NOTE: Linux keeps a process's peak RSS across exec, and a forked child starts with its
# parent's: a child of this test process (TensorFlow loaded) would report 600 MB before
# doing anything. A small Python process in between starts the measured one and reports it.
_MEASURE = """
import json, os, subprocess, sys, threading, time
args, cwd, out, err, kill_after = json.loads(sys.argv[1])
with open(out, "wb") as o, open(err, "wb") as e:
    start = time.monotonic()
    process = subprocess.Popen(args, cwd=cwd, stdout=o, stderr=e)
    killer = threading.Timer(kill_after, process.kill)
    killer.start()
    _, status, usage = os.wait4(process.pid, 0)
    killer.cancel()
    seconds = time.monotonic() - start
process.returncode = os.waitstatus_to_exitcode(status)
print(json.dumps([process.returncode, seconds, usage.ru_maxrss]))
"""


def run_measured(args: list[str], cwd: Path, env: dict[str, str], logs: Path) -> Run:
    """Run ``python -m gradscope ARGS``; its wall time and peak RSS come from ``wait4``."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / "stdout.txt", logs / "stderr.txt"
    command = [sys.executable, "-m", "gradscope", *args]
    job = json.dumps([command, str(cwd), str(out_path), str(err_path), KILL_SECONDS])
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURE, job], env=env, capture_output=True, text=True, check=True
    )
    code, seconds, peak_kb = json.loads(measured.stdout)
    return Run(
        code=code,
        stdout=out_path.read_text(encoding="utf-8", errors="replace"),
        stderr=err_path.read_text(encoding="utf-8", errors="replace"),
        seconds=seconds,
        peak_mb=peak_kb / 1024,  # kilobytes on Linux
    )


def _environment(tmp: Path, *, block_tensorflow: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRADSCOPE_TRACEBACK", None)
    env["HOME"] = str(tmp / "home")  # Keras writes ~/.keras: keep it out of the real home
    env["KERAS_HOME"] = str(tmp / "home" / ".keras")
    if block_tensorflow:
        blocker = _blocked_modules(tmp / "blocked")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [blocker, env.get("PYTHONPATH")]))
    return env


def _prepare(source: Path, scratch: Path) -> None:
    """Copy the attack into the scratch folder; three attacks are grown to their full size."""
    scratch.mkdir(parents=True)
    text = source.read_text(encoding="utf-8")
    if source.name == "size-file.yaml":
        text += "#" + "x" * (8 * 2**20) + "\n"
    if source.name == "size-work.yaml":
        text += "".join(
            f"  - {{name: n{i}, op: sin, inputs: [n{i - 1}]}}\n" for i in range(1, 5_000)
        )
    if source.name == "size-many-values.yaml":
        text = text.replace("MANY", "[" + ",".join(["1"] * 3_900_000) + "]")
    if source.name == "deep-nesting-libyaml.yaml":
        text = text.replace("ABYSS", "[" * 30_000 + "]" * 30_000)
    if source.name == "deep-nesting.yaml":
        text = text.replace("DEEP", "[" * 5000 + "1.0" + "]" * 5000)
    (scratch / "spec.yaml").write_text(text, encoding="utf-8")
    os.mkfifo(scratch / "reads.fifo")


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    """Forks ``validate``-stage runs: TensorFlow and Keras cannot even be imported."""
    tmp = tmp_path_factory.mktemp("light")
    with driver(_environment(tmp, block_tensorflow=True), tensorflow=False,
                kill_after=KILL_SECONDS) as light:  # fmt: skip
        yield light


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Driver]:
    """Forks ``build``-stage runs from a driver that imported TensorFlow."""
    tmp = tmp_path_factory.mktemp("heavy")
    with driver(_environment(tmp, block_tensorflow=False), tensorflow=True,
                kill_after=KILL_SECONDS) as heavy:  # fmt: skip
        yield heavy


def _tiny(tmp: Path) -> Path:
    scratch = tmp / "scratch"
    scratch.mkdir(parents=True)
    (scratch / "spec.yaml").write_text(
        "gradscope: 1\nvariables: {w: {shape: [2]}}\n"
        "nodes: [{name: s, op: reduce_sum, inputs: [w]}]\nlosses: {l: s}\n",
        encoding="utf-8",
    )
    return scratch


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, heavy: Driver) -> Run:
    """A tiny valid spec run the same way: what one trace costs a child of ``heavy``."""
    tmp = tmp_path_factory.mktemp("baseline")
    env = _environment(tmp, block_tensorflow=False)
    run = heavy.run(["inspect", "spec.yaml", "-q"], _tiny(tmp), env, tmp / "logs")
    assert run.code == 0, run.stderr
    return run


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _cases() -> list[object]:
    """Every attack; those refused only once TensorFlow builds them need TensorFlow."""
    return [
        pytest.param(p, id=p.stem, marks=[pytest.mark.tf] if _header(p, "stage") == "build" else [])
        for p in HOSTILE
    ]


@pytest.mark.parametrize("source", _cases())
def test_hostile_spec_is_refused_in_bounded_time_and_memory_running_nothing(
    source: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    stage = _header(source, "stage")
    assert stage in ("validate", "build")
    forks: Driver = request.getfixturevalue("light" if stage == "validate" else "heavy")
    env = _environment(tmp_path, block_tensorflow=False)
    _refused(
        source, tmp_path, request, lambda args, cwd: forks.run(args, cwd, env, tmp_path / "logs")
    )


def test_hostile_spec_is_refused_by_python_m_gradscope(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The whole way a shell starts it, Python's start-up and imports included."""
    source = ROOT / "tests" / "hostile" / "python-apply.yaml"
    env = _environment(tmp_path, block_tensorflow=True)
    _refused(
        source, tmp_path, request, lambda args, cwd: run_measured(args, cwd, env, tmp_path / "logs")
    )


def _refused(
    source: Path, tmp_path: Path, request: pytest.FixtureRequest,
    run_in: Callable[[list[str], Path], Run],
) -> None:  # fmt: skip
    """Run the attack in a scratch folder and check the refusal, its cost and the folder."""
    expect, stage = _header(source, "expect"), _header(source, "stage")
    scratch = tmp_path / "scratch"
    _prepare(source, scratch)
    before = _files(scratch)

    run = run_in(["inspect", "spec.yaml", "-q"], scratch)

    assert run.code == 2, f"exit {run.code}\n{run.stderr}"
    assert run.stdout == ""
    lines = run.stderr.splitlines()
    assert lines and all(_LINE.match(line) for line in lines), run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert expect in run.stderr
    if stage == "validate":  # TensorFlow was never imported (the blocker would have failed)
        assert run.seconds < VALIDATE_SECONDS, run.seconds
        assert run.peak_mb < VALIDATE_MB, run.peak_mb
    else:
        baseline: Run = request.getfixturevalue("baseline")
        assert run.seconds < baseline.seconds + BUILD_EXTRA_SECONDS, (run.seconds, baseline)
        assert run.peak_mb < baseline.peak_mb + BUILD_EXTRA_MB, (run.peak_mb, baseline)
    assert _files(scratch) == before  # nothing written where the attack pointed
    assert not [p for p in tmp_path.rglob("*MARKER*")]


def test_hostile_corpus_covers_every_kind_of_attack() -> None:
    names = {p.stem for p in HOSTILE}
    for prefix in ("alias-bomb", "python-", "op-", "op-trick-", "layer-", "attr-", "size-"):
        assert any(n.startswith(prefix) for n in names), prefix
    spellings = {_spelling(p) for p in HOSTILE if p.stem.startswith("op-")}
    for needed in ("tf.io.write_file", "io.write_file", "compat.v1.io.write_file"):
        assert needed in spellings


def _spelling(path: Path) -> str:
    match = re.search(r'op: "([^"]+)"', path.read_text(encoding="utf-8"))
    return match.group(1).strip() if match else ""
