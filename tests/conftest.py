"""Shared test helpers: repository paths, spec files in tmp dirs, and the CLI as users run it."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.forked import Driver

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))

pytest_plugins = ["tests.timing"]

RunCli = Callable[..., subprocess.CompletedProcess[str]]

# The signal tests assert what a process does on SIGHUP by default (Python ends on the spot;
# gradscope writes its report, then ends). A suite started under ``nohup`` would hand every
# process it starts an ignored SIGHUP, which they then rightly ignore: this process and the
# ones it starts (xdist's workers too: they load this file) get the default back.
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., str]:
    """Write dedented YAML text to a file in a temporary directory and return its path."""

    def write(text: str, name: str = "spec.yaml") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def no_tensorflow(tmp_path: Path) -> dict[str, str]:
    """An environment in which ``import tensorflow`` (and keras) fails loudly."""
    blocker = tmp_path / "blocked-modules"
    for name in ("tensorflow", "keras"):
        package = blocker / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ImportError('{name} must not be imported here')\n", encoding="utf-8"
        )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    return env


def run_process(
    *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m gradscope ARGS...`` in a subprocess, as a user runs it (TensorFlow imported
    anew each time: a few seconds; only for what a process must show, such as no import)."""
    return subprocess.run(
        [sys.executable, "-m", "gradscope", *args],
        cwd=cwd or ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def run_in_process(
    *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The same command through click's runner in this process: TensorFlow is imported once
    for the whole session. Standard output and error stay apart, neither is a terminal (as
    when piped), ``env`` replaces the environment and ``cwd`` the working directory for the
    call, and modules a Python target imported are forgotten afterwards (two tests' loose
    ``model.py`` files never meet in ``sys.modules``)."""
    from click.testing import CliRunner

    from gradscope._src.cli import main

    changes: dict[str, str | None] = {}
    if env is not None:
        changes = {k: v for k, v in env.items() if os.environ.get(k) != v}
        changes.update({k: None for k in os.environ if k not in env})
    from gradscope._src.cli import common

    before, path, here = set(sys.modules), list(sys.path), os.getcwd()
    after = common.PLAIN_AFTER
    common.PLAIN_AFTER = 1e9  # the session's first TensorFlow import is slow: no log line
    os.chdir(cwd or ROOT)
    try:
        result = CliRunner(env=changes).invoke(main, list(args), catch_exceptions=True)
    finally:
        common.PLAIN_AFTER = after
        os.chdir(here)
        sys.path[:] = path
        for name in set(sys.modules) - before:
            if _users_module(sys.modules[name]):
                del sys.modules[name]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a bug escaped the command group: show its traceback
    return subprocess.CompletedProcess(
        ["gradscope", *args], result.exit_code, result.stdout, result.stderr
    )


def _users_module(module: object) -> bool:
    """A module a Python target brought in (not the standard library, a package or gradscope)."""
    file = getattr(module, "__file__", None) or ""
    installed = (sys.prefix, sys.base_prefix, str(ROOT / "gradscope"))
    return bool(file) and not file.startswith(installed)


@pytest.fixture
def run_cli() -> RunCli:
    """Run ``gradscope ARGS...`` as a user would, in this process.

    A call whose ``env`` changes ``PYTHONPATH`` (``no_tensorflow``: proving a command never
    imports TensorFlow) runs in a subprocess, where that can be seen.
    """

    def run(
        *args: str, cwd: str | Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        if env is not None and env.get("PYTHONPATH") != os.environ.get("PYTHONPATH"):
            return run_process(*args, cwd=cwd, env=env)
        return run_in_process(*args, cwd=cwd, env=env)

    return run


@pytest.fixture
def run_subprocess() -> RunCli:
    """Run ``python -m gradscope ARGS...`` in a subprocess: the end-to-end tests."""
    return run_process


#: The environment as the worker started (a test's pytester or monkeypatch changes
#: ``os.environ`` for its time).
SESSION_ENV = dict(os.environ)

#: Variables a forked process reads only once it runs (``tests/forked.py`` sets its whole
#: environment then), never at its driver's imports: environments that differ only in these
#: share a driver. Any other difference (``PYTHONPATH``, TensorFlow's variables, ``HOME``, where
#: Keras looks for its configuration) starts a driver of its own.
RUN_TIME_ONLY = frozenset(
    {
        "PYTEST_CURRENT_TEST",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "TERM",
        "MODE",
        "READY",
        "GRADFLOW_TRUTH",
    }
)  # fmt: skip  (MODE, READY: test programs'; GRADFLOW_TRUTH: the gradflow benchmark's)


class Drivers:
    """The session's drivers (``tests/forked.py``), one per import (``forked.IMPORTS``:
    ``gradscope`` processes and ``main()`` children fork from the same) and environment as
    that import sees it (:data:`RUN_TIME_ONLY` and the repository on ``PYTHONPATH`` aside):
    each started when first asked, shared by every test file of the worker after, stopped at
    the session's end. Each child still gets the whole environment it was asked with."""

    #: the longest any child may run, in seconds; a test asks for less per run
    KILL_AFTER = 600.0

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self._started: dict[tuple[str, tuple[tuple[str, str], ...]], Driver] = {}

    def _get(self, kind: str, env: Mapping[str, str]) -> Driver:
        from tests import forked

        imports = dict(env)
        # the repository on the path shadows nothing a driver imports (its gradscope is the
        # installed one): each child gets its own PYTHONPATH on sys.path (tests/forked.py)
        path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
        imports.pop("PYTHONPATH", None)
        if path:
            imports["PYTHONPATH"] = os.pathsep.join(path)
        items = tuple(sorted((k, v) for k, v in imports.items() if k not in RUN_TIME_ONLY))
        key = (forked.IMPORTS[kind], items)  # "process" and "tensorflow" share theirs
        if key not in self._started:
            started = forked.started(imports, kind, kill_after=self.KILL_AFTER)
            self._started[key] = self._stack.enter_context(started)
        return self._started[key].as_kind(kind)

    def processes(self, env: Mapping[str, str]) -> Driver:
        """Whole ``gradscope ARGS`` processes (``tests/forked.py``: ``processes``)."""
        return self._get("process", env)

    def programs(self, env: Mapping[str, str]) -> Driver:
        """``python SCRIPT ARGS`` processes of programs that import TensorFlow (``programs``)."""
        return self._get("python", env)

    def cli(self, env: Mapping[str, str], *, tensorflow: bool) -> Driver:
        """``gradscope ARGS`` run by ``main()`` in a child (``driver``)."""
        return self._get("tensorflow" if tensorflow else "cli", env)


@pytest.fixture(scope="session")
def drivers() -> Iterator[Drivers]:
    """The worker's :class:`Drivers`, stopped on every way out of the session."""
    with contextlib.ExitStack() as stack:
        yield Drivers(stack)


#: A whole ``gradscope ARGS`` process forked by :func:`gradscope_processes`: ``(args, cwd,
#: env)`` -> the finished process (``fsize``: its files' size limit in bytes, when given).
Processes = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def gradscope_processes(drivers: Drivers, tmp_path_factory: pytest.TempPathFactory) -> Processes:
    """Run ``gradscope ARGS`` as a process of its own, as ``python -m gradscope ARGS`` in
    ``cwd`` with ``env`` would (exit code, standard output and error, signals, atexit), but
    forked (``tests/forked.py``: ``processes``) from a driver that imported TensorFlow and
    gradscope once for the session (:class:`Drivers`). A ``gradscope run`` then costs its
    program, not TensorFlow's import again (a five-line program: 5.0 s of CPU -> 0.4 s). Its
    standard output and error are files, not pipes (``fsize`` limits them too). Not for tests
    of the process's start (banners, start-up logs, import costs)."""

    def run(args: list[str], cwd: Path, env: Mapping[str, str], *,
            fsize: int | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        logs = tmp_path_factory.mktemp("gradscope-process")
        done = drivers.processes(env).run(list(args), cwd, env, logs, fsize=fsize)
        return subprocess.CompletedProcess(["gradscope", *args], done.code, done.stdout,
                                           done.stderr)  # fmt: skip

    return run


@pytest.fixture(scope="session")
def python_processes(drivers: Drivers, tmp_path_factory: pytest.TempPathFactory) -> Processes:
    """Run ``python ARGS`` (a script and its arguments; ``["-c", CODE]`` runs CODE from a
    script file) in ``cwd`` with ``env`` as a process of its own, forked from a driver that
    imported TensorFlow (:meth:`Drivers.programs`): for programs that import TensorFlow
    (TensorFlow 1 behaviour, which no process can undo, included) whose start is not the
    point. The script's folder is first on ``sys.path`` (``-c``: a temporary one, not
    ``cwd``); standard output and error are files; ``kill_after`` bounds it in seconds."""

    def run(args: list[str], cwd: Path, env: Mapping[str, str], *,
            kill_after: float | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        logs = tmp_path_factory.mktemp("python-process")
        if args[0] == "-c":
            script = logs / "code.py"
            script.write_text(args[1], encoding="utf-8")
            args = [str(script), *args[2:]]
        done = drivers.programs(env).run(list(args), cwd, env, logs, kill_after=kill_after)
        return subprocess.CompletedProcess(["python", *args], done.code, done.stdout,
                                           done.stderr)  # fmt: skip

    return run


#: Logical CPU devices a ``replicas`` test may use (``--strategy mirrored --replicas 2``).
REPLICAS = 2


def pytest_configure(config: pytest.Config) -> None:
    """Output widths are the documented default (120 columns when not on a terminal), not
    whatever the shell or a test runner exported (pytest-xdist's workers get ``COLUMNS=80``)."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


#: Each test file's CPU seconds (its processes' too) in the last recorded full run (``make
#: times``; ``tests/timing.py``). ``make test`` hands whole files to its workers (``--dist
#: loadfile``: a module fixture runs once, not once per worker that got one of its tests), each
#: worker taking the next file as it runs out: in this order, the costliest first, no costly
#: file is left to run alone at the end.
TIMES = ROOT / "tests" / "times.json"


def recorded_costs() -> tuple[dict[str, float], float]:
    """:data:`TIMES`: test file -> CPU seconds, and what a file not in it is taken to cost
    (its ``unknown_cpu``; the costliest recorded when absent: a new file may be costly, and
    one left to the end would run alone). Nothing recorded: no order."""
    import json

    try:
        record = json.loads(TIMES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, 0.0
    costs = {str(name): float(cpu) for name, cpu in record.get("files", {}).items()}
    return costs, float(record.get("unknown_cpu", max(costs.values(), default=0.0)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Whole files, the costliest recorded first (:func:`recorded_costs`); a file's tests keep
    their order, and files of the same cost theirs."""
    costs, unknown = recorded_costs()
    items.sort(key=lambda item: -costs.get(item.nodeid.partition("::")[0], unknown))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Import TensorFlow once, before any test, when a test needs it; make the logical CPU
    devices ``replicas`` tests run on; then freeze what the imports made.

    TensorFlow fixes its devices when it first initialises them, so this happens once, after
    collection and before the first test touches TensorFlow; sessions without a ``tf`` test
    (``make test-fast``) never import TensorFlow here.

    ``gc.freeze()`` moves the objects alive now (TensorFlow's and Keras' modules, hundreds of
    thousands of them, alive until the worker ends) out of the cycle collector's reach: each
    full collection in a test then walks only what the tests made. It was a quarter of the CPU
    of a TensorFlow test file (tests/watch/test_block.py: 7.0 of 30.1 s; 2.1 of 23.9 frozen).
    Objects made later are collected as before.
    """
    replicas = any(item.get_closest_marker("replicas") for item in session.items)
    if replicas or any(item.get_closest_marker("tf") for item in session.items):
        from gradscope._src.engine.tf_import import import_tensorflow

        tf = import_tensorflow()
        if replicas:
            from gradscope._src.distribute.devices import configure

            configure(tf, REPLICAS)
    gc.collect()
    gc.freeze()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> object:
    """The cycle collector paused while the test files (and TensorFlow) are imported: they
    make objects that live until the worker ends, which it would walk again and again for
    nothing (what cycles the imports leave are collected once, before the freeze above)."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()
