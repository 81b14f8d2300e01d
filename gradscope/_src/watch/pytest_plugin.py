"""gradscope's pytest plugin: ``pytest --gradscope`` fails a test whose gradient calls got an
unexpected None or NaN gradient, with the report in the failure.

Off unless asked: installing gradscope registers this module (a ``pytest11`` entry point),
which only adds the option, the marker and the fixture, and imports no TensorFlow. A test is
watched when ``--gradscope`` is given or it carries ``@pytest.mark.gradscope(...)``; then
``gradscope.watch()`` runs around its call (not its fixtures) and the test fails on any
problem of the report. A test that takes the ``gradscope_watch`` fixture watches what it
chooses and asserts itself, so it is not watched around as a whole. ``-p no:gradscope``
removes the plugin.

With ``--gradscope``, the test file (or conftest) that imports TensorFlow does so while the
cycle collector is paused, and what is alive once it is imported (TensorFlow's modules,
pytest's own objects, the files collected so far: all alive until pytest ends) is frozen out
of the collector's walks, as ``gradscope run``'s own process freezes what TensorFlow's import
made (:func:`gradscope._src.engine.tf_import.own_process`). TensorFlow is still imported by
the user's code, when it asks, so environment variables set before the import still apply.
"""

from __future__ import annotations

import difflib
import functools
import gc
import importlib.abc
import re
import sys
from collections.abc import Generator
from types import TracebackType
from typing import Any

import pytest

from gradscope._src.gcpause import paused

#: The options ``@pytest.mark.gradscope(...)`` takes (those of ``gradscope.watch()``).
OPTIONS = ("allow_none", "steps")
#: The attribute of a test's call report that carries its counts (xdist sends it on).
FIELD = "gradscope"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gradscope", "gradscope (gradient calls of TensorFlow tests)")
    group.addoption(
        "--gradscope",
        action="store_true",
        default=False,
        help="Watch every test's gradient calls (gradscope.watch) and fail a test that got "
        "an unexpected None or NaN gradient, with the report in the failure.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "gradscope(allow_none=[GLOB, ...], steps=N): watch this test's gradient calls (also "
        "without --gradscope): the first N executions of each call site; a None gradient "
        "for a source an allow_none glob names is not a problem.",
    )
    config.pluginmanager.register(Watching(config), "gradscope-watching")


@pytest.fixture
def gradscope_watch() -> Any:
    """``gradscope.watch``, for a test that asserts on its own report::

        def test_step(gradscope_watch):
            with gradscope_watch(steps=1) as w:
                model.fit(x, y, epochs=1)
            assert w.report.problems == ()

    A test that takes this fixture is not watched as a whole by ``--gradscope``.
    """
    from gradscope._src.watch.block import watch

    return watch


class Watching:
    """Watches the tests that asked for it, and counts them for the summary line."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.everywhere = bool(config.getoption("gradscope"))
        self.frozen = False  # what TensorFlow's import made is out of the collector's walks
        self.tests = 0
        self.calls = 0
        self.failed: list[str] = []  # node ids that failed on their gradients
        self.kinds: dict[str, int] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, Any, Any]:
        """Until TensorFlow is imported, collect (import test files) with the collector
        paused; freeze once it is. A full collection walks the import's growing heap again
        and again for the few cycles it leaves (1.6 s of CPU in a one-test file here), and
        each later one, up to the last at exit (1.5 s), walks it once more."""
        if not self.everywhere or self.frozen:
            return (yield)
        with paused():
            report = yield
        if "tensorflow" in sys.modules:
            gc.freeze()
            self.frozen = True
        return report

    def _options(self, item: pytest.Item) -> dict[str, Any] | None:
        """The ``watch()`` options of a test to watch; None: not watched."""
        marker = item.get_closest_marker("gradscope")
        if "gradscope_watch" in getattr(item, "fixturenames", ()):
            return None
        if marker is None:
            return {} if self.everywhere else None
        if marker.args:
            pytest.fail(f"@pytest.mark.gradscope takes keyword options ({', '.join(OPTIONS)}), "
                        f"saw {marker.args[0]!r}", pytrace=False)  # fmt: skip
        for name in marker.kwargs:
            if name not in OPTIONS:
                pytest.fail(_unknown(name), pytrace=False)
        return dict(marker.kwargs)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        options = self._options(item)
        if options is None:
            return (yield)
        from gradscope._src.errors import UsageError
        from gradscope._src.watch.block import watching

        refused: str | None = None
        try:
            block = watching(options.get("steps", 1), options.get("allow_none", ()), item.nodeid)
        except UsageError as exc:  # failed below, outside the except: said once, unchained
            refused = str(exc).removeprefix("gradscope.watch: ")
        if refused is not None:
            pytest.fail(f"@pytest.mark.gradscope: {refused}", pytrace=False)
        # A test of a file that names neither TensorFlow nor Keras, run while TensorFlow is
        # not imported, is watched from the moment it imports TensorFlow itself (importing
        # it for every pure-Python test would cost a suite seconds).
        late = not options and not _uses_tensorflow(item)
        opened = _OnImport(block) if late else block
        try:
            with opened:
                result = yield
        except BaseException:  # the test's own failure stays; the report goes beside it
            if block.ended:
                item.stash[_KEY] = block.report
                if block.report.calls:
                    item.add_report_section("call", "gradscope", self._table(block.report))
            elif late and "tensorflow" in sys.modules:
                item.add_report_section("call", "gradscope", _UNWATCHED)
            raise
        if not block.ended:  # TensorFlow was not imported, or watching it could not start
            if late and "tensorflow" in sys.modules:
                item.add_report_section("call", "gradscope", _UNWATCHED)
            return result
        item.stash[_KEY] = block.report
        from gradscope._src.results import exits

        if not exits.passed(len(block.report.problems)):  # the one rule, as run's exit code
            pytest.fail(self._failure(block.report), pytrace=False)
        return result

    def _table(self, report: Any) -> str:
        from gradscope._src.report import render

        try:  # the failure is printed at the terminal's width
            width = self.config.get_terminal_writer().fullwidth
        except (AssertionError, AttributeError, ValueError):  # no terminal (-p no:terminal)
            width = 100
        return render(report, "table", width=max(80, width))

    def _failure(self, report: Any) -> str:
        said = ", ".join(f"{n} {k}" for k, n in _kinds(report).items())
        return f"gradscope: this test's gradient calls got {said}\n\n{self._table(report)}"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Generator[None, Any, Any]:
        report = yield
        seen = item.stash.get(_KEY, None)
        if call.when == "call" and seen is not None:
            setattr(report, FIELD, {"calls": len(seen.calls), "problems": _kinds(seen)})
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        counts = getattr(report, FIELD, None)
        if report.when != "call" or not isinstance(counts, dict):
            return
        self.tests += 1
        self.calls += int(counts.get("calls", 0))
        problems = counts.get("problems") or {}
        # Only a test pytest counts as failed is one here: a skipped test (pytest.skip after
        # its gradient calls) and an xfailed one (its None gradient is the expected failure)
        # are not, whatever their gradients got.
        if not problems or not report.failed:
            return
        self.failed.append(report.nodeid)
        for kind, n in problems.items():
            self.kinds[kind] = self.kinds.get(kind, 0) + int(n)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.tests and not self.everywhere:
            return
        terminalreporter.write_line(self.summary())

    def summary(self) -> str:
        """``gradscope: 5 tests watched, 4 gradient calls; 2 failed: 1 unexpected-none, 1 nan``."""
        tests = f"{self.tests} test{'s' if self.tests != 1 else ''} watched"
        calls = f"{self.calls} gradient call{'s' if self.calls != 1 else ''}"
        if not self.failed:
            return f"gradscope: {tests}, {calls}; no unexpected None or NaN gradient"
        said = ", ".join(f"{n} {k}" for k, n in self.kinds.items())
        return f"gradscope: {tests}, {calls}; {len(self.failed)} failed: {said}"


_KEY = pytest.StashKey[Any]()
_UNWATCHED = ("TensorFlow was first imported inside this test, and gradscope could not start "
              "watching it there; import tensorflow at the top of the test file, or mark the "
              "test @pytest.mark.gradscope")  # fmt: skip


class _OnImport(importlib.abc.MetaPathFinder):
    """Around a test whose file names neither TensorFlow nor Keras, run while TensorFlow is
    not imported: enters ``block`` the moment the test's first import of ``tensorflow`` or
    ``keras`` has run (the outer one, so Keras is whole when the hooks patch it), and leaves
    it when the test ends. A test that imports TensorFlow itself (``runpy.run_path`` of a
    training script, a lazy ``import``) is so watched from its first gradient call on; a
    pure-Python test pays one more finder asked about each module it imports."""

    def __init__(self, block: Any) -> None:
        self.block = block
        self.entered = False
        self.armed = True  # until the first import of tensorflow or keras starts

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if not self.armed or name not in _WATCHED_IMPORTS:
            return None
        self.armed = False
        for finder in sys.meta_path:
            found = getattr(finder, "find_spec", None)
            spec = found(name, path, target) if finder is not self and found else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _Then(spec.loader, self._enter)
        return spec

    def _enter(self) -> None:
        from gradscope._src.frontends.backend import NotTensorFlow

        try:
            self.block.__enter__()
        except NotTensorFlow:  # Keras on JAX or PyTorch: the test is refused, not passed
            raise
        except Exception:  # gradscope's failure never stops the test: it runs unwatched
            return
        self.entered = True

    def __enter__(self) -> _OnImport:
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:  # fmt: skip
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if self.entered:
            self.block.__exit__(kind, error, tb)


class _Then(importlib.abc.Loader):
    """A module's own loader, then ``then()`` once the module has run. The module gets its
    own loader back before it runs, so nothing after sees this one."""

    def __init__(self, loader: Any, then: Any) -> None:
        self.loader = loader
        self.then = then

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.then()


#: The imports that start the watch of a test whose file names none of them (JAX and PyTorch
#: too: their gradients are refused, never a green test: ``frontends/backend.py``).
_WATCHED_IMPORTS = ("tensorflow", "keras", "jax", "torch")
_NAMES = re.compile(rb"\b(tensorflow|keras|jax|torch)\b")


def _uses_tensorflow(item: pytest.Item) -> bool:
    """Whether TensorFlow is imported, or the test's file names it (read once per file)."""
    if "tensorflow" in sys.modules:
        return True
    return _names_tensorflow(str(getattr(item, "path", "")))


@functools.lru_cache(maxsize=1024)
def _names_tensorflow(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return _NAMES.search(f.read()) is not None
    except OSError:
        return True  # cannot tell: watch it


def _kinds(report: Any) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for p in report.problems:
        kinds[str(p.kind)] = kinds.get(str(p.kind), 0) + 1
    return kinds


def _unknown(name: str) -> str:
    """``no such option 'stpes'. Did you mean 'steps'?``, as click says it."""
    close = difflib.get_close_matches(name, OPTIONS, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else f" Options: {', '.join(OPTIONS)}."
    return f"@pytest.mark.gradscope: no such option {name!r}.{hint}"
