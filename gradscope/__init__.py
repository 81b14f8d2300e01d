"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

The Python API mirrors the command line::

    import gradscope

    report = gradscope.inspect("my_pkg.models:build")   # or a spec path, or a Target
    print(report.loss("main").pair("head/kernel").status)
    report.to_dict()                                     # the JSON report

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow. The public API below is imported lazily,
on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from gradscope import keras, testing
    from gradscope.analysis.check import CheckResult
    from gradscope.analysis.diff import DiffReport
    from gradscope.analysis.diff_matrix import DiffMatrix
    from gradscope.api import check, diff, inspect, run
    from gradscope.frontends.python.target import Target
    from gradscope.results.report import Report

# The one place the version lives; pyproject.toml reads it from here (importlib.metadata
# would cost ~60 ms on every `gradscope --help`).
__version__ = "0.1.0"

#: Public names, imported on first use so that ``import gradscope`` stays TensorFlow-free.
_LAZY = {
    "inspect": "gradscope.api",
    "diff": "gradscope.api",
    "check": "gradscope.api",
    "Report": "gradscope.results.report",
    "DiffReport": "gradscope.analysis.diff",
    "DiffMatrix": "gradscope.analysis.diff_matrix",
    "CheckResult": "gradscope.analysis.check",
    "run": "gradscope.api",
    "Target": "gradscope.frontends.python.target",
    "testing": "gradscope.testing",
    "keras": "gradscope.keras",
}

#: Names that are modules rather than objects inside one.
_MODULES = frozenset({"testing", "keras"})

__all__ = [
    "CheckResult",
    "DiffMatrix",
    "DiffReport",
    "Report",
    "Target",
    "__version__",
    "check",
    "diff",
    "inspect",
    "keras",
    "run",
    "testing",
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
