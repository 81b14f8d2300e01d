"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow.
"""

from __future__ import annotations

from importlib import import_module, metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from gradscope.analysis.diff import DiffReport
    from gradscope.analysis.diff_matrix import DiffMatrix
    from gradscope.analysis.model import Report
    from gradscope.api import diff, inspect

try:
    __version__ = metadata.version("gradscope")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"

#: Public names, imported on first use so that ``import gradscope`` stays TensorFlow-free.
_LAZY = {
    "inspect": "gradscope.api",
    "diff": "gradscope.api",
    "Report": "gradscope.analysis.model",
    "DiffReport": "gradscope.analysis.diff",
    "DiffMatrix": "gradscope.analysis.diff_matrix",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gradscope' has no attribute {name!r}")


__all__ = ["DiffMatrix", "DiffReport", "Report", "__version__", "diff", "inspect"]
