"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

The Python API mirrors the command line::

    import gradscope

    report = gradscope.inspect("my_pkg.models:build")   # or a spec path, or a Target
    print(report.loss("main").pair("head/kernel").status)  # a gradscope.Status
    report.to_dict()                                     # the JSON report
    gradscope.check(["configs/multitask.yaml"])          # the CI gate: a CheckResult
    gradscope.graph("configs/stop-gradient.yaml", "exp1")  # one loss's picture
    pictured = gradscope.inspect("configs/stop-gradient.yaml", pictures=True)
    gradscope.draw(pictured, "exp1", "mermaid")          # a picture's Mermaid text

Errors are ``gradscope.GradscopeError`` subclasses: ``SpecErrors`` (every problem of a
spec, located), ``TargetError``, ``BuildError``, ``UsageError``.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow. The public API below is imported lazily,
on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from gradscope import keras, testing
    from gradscope._watch.block import Watch, watch
    from gradscope.api import check, diff, draw, graph, inspect, run
    from gradscope.errors import (
        AlreadyWatching,
        BuildError,
        ExitCode,
        GradscopeError,
        SpecError,
        SpecErrors,
        TargetError,
        UsageError,
    )
    from gradscope.frontends.python.target import Target
    from gradscope.results.check import CheckResult
    from gradscope.results.diff import DiffMatrix, DiffReport
    from gradscope.results.report import LossResult, PairResult, Problem, Report
    from gradscope.results.run import RunReport
    from gradscope.results.status import ProblemKind, Status, Verdict
    from gradscope.timeline.findings import Thresholds
    from gradscope.timeline.inline import plot

# Results are plain data; the report layer draws them in notebooks and rich consoles (it fills
# ``gradscope.results.display.DRAW``), so it is imported with the package. It is light: no
# TensorFlow, no rich (the renderers import what they need when they draw).
from gradscope import report as _report  # noqa: F401
from gradscope.version import __version__ as __version__

#: Public names, imported on first use so that ``import gradscope`` stays TensorFlow-free.
_LAZY = {
    "inspect": "gradscope.api",
    "diff": "gradscope.api",
    "check": "gradscope.api",
    "graph": "gradscope.api",
    "run": "gradscope.api",
    "draw": "gradscope.api",
    "Thresholds": "gradscope.timeline.findings",
    "watch": "gradscope._watch.block",
    "plot": "gradscope.timeline.inline",
    "load_ipython_extension": "gradscope._watch.magic",
    "unload_ipython_extension": "gradscope._watch.magic",
    "Watch": "gradscope._watch.block",
    "RunReport": "gradscope.results.run",
    "Report": "gradscope.results.report",
    "LossResult": "gradscope.results.report",
    "PairResult": "gradscope.results.report",
    "Problem": "gradscope.results.report",
    "Status": "gradscope.results.status",
    "ProblemKind": "gradscope.results.status",
    "Verdict": "gradscope.results.status",
    "DiffReport": "gradscope.results.diff",
    "DiffMatrix": "gradscope.results.diff",
    "CheckResult": "gradscope.results.check",
    "Target": "gradscope.frontends.python.target",
    "GradscopeError": "gradscope.errors",
    "SpecError": "gradscope.errors",
    "SpecErrors": "gradscope.errors",
    "TargetError": "gradscope.errors",
    "BuildError": "gradscope.errors",
    "UsageError": "gradscope.errors",
    "AlreadyWatching": "gradscope.errors",
    "ExitCode": "gradscope.errors",
    "testing": "gradscope.testing",
    "keras": "gradscope.keras",
}

#: Names that are modules rather than objects inside one.
_MODULES = frozenset({"testing", "keras"})

__all__ = [
    "AlreadyWatching",
    "BuildError",
    "CheckResult",
    "DiffMatrix",
    "DiffReport",
    "ExitCode",
    "GradscopeError",
    "LossResult",
    "PairResult",
    "Problem",
    "ProblemKind",
    "Report",
    "RunReport",
    "SpecError",
    "SpecErrors",
    "Status",
    "Target",
    "TargetError",
    "Thresholds",
    "UsageError",
    "Verdict",
    "Watch",
    "__version__",
    "check",
    "diff",
    "draw",
    "graph",
    "inspect",
    "keras",
    "plot",
    "run",
    "testing",
    "watch",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gradscope' has no attribute {name!r}")
    imported = importlib.import_module(module)
    value = imported if name in _MODULES else getattr(imported, name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
