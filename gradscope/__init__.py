"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow. The public API below is imported lazily,
on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from gradscope import testing
    from gradscope.analysis.check import CheckResult
    from gradscope.analysis.diff import DiffReport
    from gradscope.analysis.diff_matrix import DiffMatrix
    from gradscope.analysis.model import Report
    from gradscope.api import check, diff, inspect

# The one place the version lives; pyproject.toml reads it from here (importlib.metadata
# would cost ~60 ms on every `gradscope --help`).
__version__ = "0.1.0"

#: Public names, imported on first use so that ``import gradscope`` stays TensorFlow-free.
_LAZY = {
    "inspect": "gradscope.api",
    "diff": "gradscope.api",
    "check": "gradscope.api",
    "Report": "gradscope.analysis.model",
    "DiffReport": "gradscope.analysis.diff",
    "DiffMatrix": "gradscope.analysis.diff_matrix",
    "CheckResult": "gradscope.analysis.check",
    "testing": "gradscope.testing",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'gradscope' has no attribute {name!r}")
    module = import_module(_LAZY[name])
    return module if name == "testing" else getattr(module, name)


__all__ = [
    "CheckResult",
    "DiffMatrix",
    "DiffReport",
    "Report",
    "__version__",
    "check",
    "diff",
    "inspect",
    "testing",
]
