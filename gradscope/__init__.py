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

Every result gives what it fails on as ``gradscope.Finding`` objects (``result.findings()``:
kind, ``gradscope.Location``, message, cause, ``gradscope.CutPoint`` list, ``gradscope.Fix``),
whichever command or function made it; the result types are importable from here to annotate.

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
    from gradscope._src.api import check, diff, draw, graph, inspect, run
    from gradscope._src.errors import (
        AlreadyWatching,
        BuildError,
        ExitCode,
        GradscopeError,
        SpecError,
        SpecErrors,
        TargetError,
        UsageError,
    )
    from gradscope._src.frontends.python.target import Target
    from gradscope._src.location import Location
    from gradscope._src.results.causes import Cause
    from gradscope._src.results.check import CheckResult
    from gradscope._src.results.cut import CutPoint
    from gradscope._src.results.diff import Diff, DiffMatrix, DiffReport, VariableDiff
    from gradscope._src.results.facts import NanOrigin
    from gradscope._src.results.finding import Finding
    from gradscope._src.results.fix import Edit, Fix
    from gradscope._src.results.loaded import Loaded
    from gradscope._src.results.picture import Picture
    from gradscope._src.results.report import LossResult, PairResult, Problem, Report
    from gradscope._src.results.run import CallResult, RunProblem, RunReport, SourceResult
    from gradscope._src.results.status import FindingKind, ProblemKind, Status, Verdict
    from gradscope._src.timeline.findings import Thresholds
    from gradscope._src.timeline.inline import TimelinePlot, plot
    from gradscope._src.watch.block import Watch, watch

# Results are plain data; the report layer draws them in notebooks and rich consoles (it fills
# ``gradscope._src.results.display.DRAW``), so it is imported with the package. It is light: no
# TensorFlow, no rich (the renderers import what they need when they draw).
from gradscope._src import report as _report  # noqa: F401
from gradscope._src.version import __version__ as __version__

#: Public names, imported on first use so that ``import gradscope`` stays TensorFlow-free.
_LAZY = {
    "inspect": "gradscope._src.api",
    "diff": "gradscope._src.api",
    "check": "gradscope._src.api",
    "graph": "gradscope._src.api",
    "run": "gradscope._src.api",
    "draw": "gradscope._src.api",
    "Thresholds": "gradscope._src.timeline.findings",
    "watch": "gradscope._src.watch.block",
    "plot": "gradscope._src.timeline.inline",
    "load_ipython_extension": "gradscope._src.watch.magic",
    "unload_ipython_extension": "gradscope._src.watch.magic",
    "Watch": "gradscope._src.watch.block",
    "RunReport": "gradscope._src.results.run",
    "CallResult": "gradscope._src.results.run",
    "SourceResult": "gradscope._src.results.run",
    "RunProblem": "gradscope._src.results.run",
    "Report": "gradscope._src.results.report",
    "LossResult": "gradscope._src.results.report",
    "PairResult": "gradscope._src.results.report",
    "Problem": "gradscope._src.results.report",
    "Status": "gradscope._src.results.status",
    "ProblemKind": "gradscope._src.results.status",
    "Verdict": "gradscope._src.results.status",
    "FindingKind": "gradscope._src.results.status",
    "DiffReport": "gradscope._src.results.diff",
    "DiffMatrix": "gradscope._src.results.diff",
    "Diff": "gradscope._src.results.diff",
    "VariableDiff": "gradscope._src.results.diff",
    "CheckResult": "gradscope._src.results.check",
    "Cause": "gradscope._src.results.causes",
    "Finding": "gradscope._src.results.finding",
    "Location": "gradscope._src.location",
    "CutPoint": "gradscope._src.results.cut",
    "Fix": "gradscope._src.results.fix",
    "Edit": "gradscope._src.results.fix",
    "NanOrigin": "gradscope._src.results.facts",
    "Loaded": "gradscope._src.results.loaded",
    "Picture": "gradscope._src.results.picture",
    "TimelinePlot": "gradscope._src.timeline.inline",
    "Target": "gradscope._src.frontends.python.target",
    "GradscopeError": "gradscope._src.errors",
    "SpecError": "gradscope._src.errors",
    "SpecErrors": "gradscope._src.errors",
    "TargetError": "gradscope._src.errors",
    "BuildError": "gradscope._src.errors",
    "UsageError": "gradscope._src.errors",
    "AlreadyWatching": "gradscope._src.errors",
    "ExitCode": "gradscope._src.errors",
    "testing": "gradscope.testing",
    "keras": "gradscope.keras",
}

#: Names that are modules rather than objects inside one.
_MODULES = frozenset({"testing", "keras"})

__all__ = [
    "AlreadyWatching",
    "BuildError",
    "CallResult",
    "Cause",
    "CheckResult",
    "CutPoint",
    "Diff",
    "DiffMatrix",
    "DiffReport",
    "Edit",
    "ExitCode",
    "Finding",
    "FindingKind",
    "Fix",
    "GradscopeError",
    "Loaded",
    "Location",
    "LossResult",
    "NanOrigin",
    "PairResult",
    "Picture",
    "Problem",
    "ProblemKind",
    "Report",
    "RunProblem",
    "RunReport",
    "SourceResult",
    "SpecError",
    "SpecErrors",
    "Status",
    "Target",
    "TargetError",
    "Thresholds",
    "TimelinePlot",
    "UsageError",
    "VariableDiff",
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
