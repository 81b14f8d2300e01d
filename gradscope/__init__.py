"""gradscope: for every loss and every variable, does a gradient flow, and if not, why not.

The Python API mirrors the command line::

    import gradscope

    report = gradscope.inspect("my_pkg.models:build")   # or a spec path, or a Target
    print(report.loss("main").pair("head/kernel").status)
    report.to_dict()                                     # the JSON report

Importing this package stays light (no TensorFlow): ``gradscope --help`` and
``gradscope validate`` must not pay for TensorFlow. The names below are loaded on first use.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

try:
    __version__ = metadata.version("gradscope")
except metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.1.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "inspect": "gradscope.api",
    "diff": "gradscope.api",
    "check": "gradscope.api",
    "run": "gradscope.api",
    "Target": "gradscope.targets.target",
    "Report": "gradscope.analysis.model",
    "keras": "gradscope.keras",
}

__all__ = ["Report", "Target", "__version__", "check", "diff", "inspect", "keras"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gradscope' has no attribute {name!r}")
    if name == "keras":
        return importlib.import_module(module)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
