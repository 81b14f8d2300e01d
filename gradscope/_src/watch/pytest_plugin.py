"""gradscope's pytest plugin: ``pytest --gradscope`` fails a test whose gradient calls got an
unexpected None or NaN gradient, with the report in the failure.

Off unless asked: installing gradscope registers this module (a ``pytest11`` entry point),
which only adds the option, the marker and the fixture, and imports no TensorFlow. A test is
watched when ``--gradscope`` is given or it carries ``@pytest.mark.gradscope(...)``; then
``gradscope.watch()`` runs around its call (not its fixtures) and the test fails on any
problem of the report. A test that takes the ``gradscope_watch`` fixture watches what it
chooses and asserts itself, so it is not watched around as a whole. ``-p no:gradscope``
removes the plugin.

A test that watches its own block (``gradscope.watch()``, the fixture) under ``--gradscope``
joins the watch around it and gets its own block's report, as it would under plain pytest.

With ``--gradscope``, the test file (or conftest) that imports TensorFlow does so while the
cycle collector is paused, and what is alive once it is imported (TensorFlow's modules,
pytest's own objects, the files collected so far: all alive until pytest ends) is frozen out
of the collector's walks, as ``gradscope run``'s own process freezes what TensorFlow's import
made (:func:`gradscope._src.engine.tf_import.own_process`). TensorFlow is still imported by
the user's code, when it asks, so environment variables set before the import still apply.
"""

from __future__ import annotations

import difflib
import gc
import sys
from collections.abc import Generator
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
        # TensorFlow is not imported for the test: a test that imports it itself (a lazy
        # import, runpy of a training script) is watched from that import on (hooks.py), and
        # one that imports JAX or PyTorch has its gradients refused (frontends/backend.py).
        try:
            with block:
                result = yield
        except BaseException:  # the test's own failure stays; the report goes beside it
            if block.ended and _framework():
                item.stash[_KEY] = block.report
                if block.report.calls:
                    item.add_report_section("call", "gradscope", self._table(block.report))
            raise
        if not block.ended or not _framework():  # neither TensorFlow nor JAX: not watched
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
        return f"{failure_line(report)}\n\n{self._table(report)}"

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


def _framework() -> bool:
    """Whether a framework gradscope watches was imported (TensorFlow, JAX): a test that
    imported neither made no gradient call to watch."""
    return "tensorflow" in sys.modules or "jax" in sys.modules


def failure_line(report: Any, most: int = 3) -> str:
    """The first line of a watched test's failure, which pytest's short summary shows cut at
    the terminal's width: the variables first (``gradscope: dense/kernel, dense/bias got 2
    unexpected-none``), so the name survives the cut."""
    names = list(dict.fromkeys(str(p.variable) for p in report.problems if p.variable))
    more = len(names) - most
    named = ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")
    said = ", ".join(f"{n} {k}" for k, n in _kinds(report).items())
    return f"gradscope: {named} got {said}" if named else f"gradscope: the test got {said}"


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
